"""Where compile records come from: a TORCH_TRACE log, a directory of them (a job's
``torch_trace/``, a multi-rank dir), or an intermediate ``kerneltracer logs`` wrote.

A raw log is parsed by the structured-logs stage 1 into a scratch intermediate that is
removed afterwards; an intermediate is read in place. A log that cannot be used is a
problem with its reason, not an exception: one bad log must not cost a fleet its table.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from kerneltracer.analysis.compile_health.records import CompileRecord, read_intermediate
from kerneltracer.errors import KernelTracerError

INTERMEDIATE_SUBDIR = "intermediate"
_RANK = re.compile(r"rank_(\d+)")


@dataclass
class LogHealth:
    source: str  # the log's path (or the intermediate's), as given
    rank: int | None
    records: list[CompileRecord] = field(default_factory=list)


@dataclass
class SourceProblem:
    source: str
    reason: str


def read_sources(path: Path) -> tuple[list[LogHealth], list[SourceProblem]]:
    """Every log under ``path`` (file or directory) as compile records, plus what failed."""
    path = Path(path)
    inter = _intermediate_of(path)
    if inter is not None:
        return _read_intermediate_tree(inter, str(path)), []
    if path.is_dir():
        logs = sorted(p for p in path.iterdir() if p.is_file() and p.suffix in (".log", ".txt"))
        found: list[LogHealth] = []
        problems: list[SourceProblem] = []
        for log in logs:
            got, bad = _read_log(log)
            found += got
            problems += bad
        if not logs and (path / "compile_directory.json").is_file():
            why = (
                "a rendered `kerneltracer logs` (or tlparse) output without its intermediate: "
                "run `kerneltracer logs LOG -o OUT --keep-intermediate`, or give the log"
            )
            problems.append(SourceProblem(str(path), why))
        elif not logs:
            problems.append(SourceProblem(str(path), "no TORCH_TRACE log (*.log) in it"))
        return found, problems
    return _read_log(path)


def _intermediate_of(path: Path) -> Path | None:
    if (path / "manifest.json").is_file():
        return path
    if (path / INTERMEDIATE_SUBDIR / "manifest.json").is_file():
        return path / INTERMEDIATE_SUBDIR
    return None


def _read_log(log: Path) -> tuple[list[LogHealth], list[SourceProblem]]:
    from kerneltracer.analysis.structured_logs.api import parse

    with tempfile.TemporaryDirectory(prefix="kt-compile-health-", dir=_scratch_root()) as tmp:
        inter = Path(tmp) / "inter"
        try:
            parse(log, inter, write_events=False)
        except (KernelTracerError, OSError) as exc:
            return [], [SourceProblem(str(log), str(exc))]
        rank = _rank_of(log.name)
        return _read_intermediate_tree(inter, str(log), rank), []


def _scratch_root() -> str | None:
    """Memory-backed scratch when there is one: an intermediate holds a directory per
    compile id, and creating and removing those on a slow disk cost more than parsing."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK) else None


def _read_intermediate_tree(inter: Path, source: str, rank: int | None = None) -> list[LogHealth]:
    manifest = orjson.loads((inter / "manifest.json").read_bytes())
    if manifest.get("parse_mode") == "multi_rank":
        return [
            LogHealth(source, int(r), read_intermediate(inter / sub))
            for r, sub in sorted(manifest.get("rank_dirs", {}).items(), key=lambda kv: int(kv[0]))
        ]
    ranks = manifest.get("ranks") or []
    if rank is None and len(ranks) == 1 and isinstance(ranks[0], int):
        rank = ranks[0]
    return [LogHealth(source, rank, read_intermediate(inter))]


def _rank_of(name: str) -> int | None:
    m = _RANK.search(name)
    return int(m.group(1)) if m else None
