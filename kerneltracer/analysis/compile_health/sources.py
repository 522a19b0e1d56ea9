"""Where compile records come from: a TORCH_TRACE log, a directory of them (a job's
``torch_trace/``, a multi-rank dir), or an intermediate ``kerneltracer logs`` wrote.

A raw log is parsed by the structured-logs stage 1 into a scratch intermediate that is
removed afterwards; an intermediate is read in place. A log that cannot be used is a
problem with its reason, not an exception: one bad log must not cost a fleet its table.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from kerneltracer.analysis.compile_health.records import (
    CompileRecord,
    TextBudget,
    read_intermediate,
)
from kerneltracer.errors import KernelTracerError, NoRecordsError, one_line

INTERMEDIATE_SUBDIR = "intermediate"
_RANK = re.compile(r"rank_(\d+)")


@dataclass
class LogHealth:
    source: str  # the log's path (or the intermediate's), as given
    rank: int | None
    records: list[CompileRecord] = field(default_factory=list)
    # How the log's end shows it was cut short (a last line without its newline, a last
    # payload cut short); empty for a whole log. Compiles left open are read from records.
    cut: list[str] = field(default_factory=list)

    def truncation(self) -> list[str]:
        """Why this log is truncated, or [] when nothing says so."""
        open_ = unfinished(self.records)
        never = [f"compile {', '.join(open_)} started and never ended"] if open_ else []
        return [*self.cut, *never]


@dataclass
class SourceProblem:
    source: str
    reason: str
    # A log that is there but cannot be read as one (binary, a line over the limit, no
    # record, a device): its job's compile health is unknown, not "no log".
    unusable: bool = False


def unfinished(records: list[CompileRecord]) -> list[str]:
    """Compiles (``[0/1]``, attempts folded) the log names but that have no
    compilation_metrics in any attempt. Dynamo writes them when a frame's compile ends,
    however it ends (failed, skipped, restarted: then in the next attempt), so only a log
    cut short lacks them."""
    seen: dict[str, None] = {}
    ended: set[str] = set()
    for r in records:
        if r.frame_id is None:
            continue
        ident = f"[{r.frame_id}/{r.frame_compile_id}]"
        seen[ident] = None
        if r.has_metrics:
            ended.add(ident)
    return [c for c in seen if c not in ended]


def read_sources(
    path: Path, budget: TextBudget | None = None
) -> tuple[list[LogHealth], list[SourceProblem]]:
    """Every log under ``path`` (file or directory) as compile records, plus what failed;
    ``budget``: how much graph / guard / code text the records may keep (none without)."""
    path = Path(path)
    inter = _intermediate_of(path)
    if inter is not None:
        return _read_intermediate_tree(inter, str(path), None, budget), []
    if path.is_dir():
        logs = sorted(p for p in path.iterdir() if p.is_file() and p.suffix in (".log", ".txt"))
        found: list[LogHealth] = []
        problems: list[SourceProblem] = []
        for log in logs:
            got, bad = _read_log(log, budget)
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
    return _read_log(path, budget)


def _intermediate_of(path: Path) -> Path | None:
    if (path / "manifest.json").is_file():
        return path
    if (path / INTERMEDIATE_SUBDIR / "manifest.json").is_file():
        return path / INTERMEDIATE_SUBDIR
    return None


def _read_log(log: Path, budget: TextBudget | None) -> tuple[list[LogHealth], list[SourceProblem]]:
    from kerneltracer.analysis.structured_logs.api import parse
    from kerneltracer.analysis.structured_logs.staging import scratch_root

    size = log.stat().st_size if log.is_file() else 0
    with tempfile.TemporaryDirectory(prefix="kt-compile-health-", dir=scratch_root(size)) as tmp:
        inter = Path(tmp) / "inter"
        try:
            parse(log, inter, write_events=False)
        except NoRecordsError as exc:
            # Only string-table lines (a process that compiled nothing): a log, no compile.
            garbage = exc.stats.fail_glog + exc.stats.fail_json + exc.stats.fail_too_large > 0
            return [], [SourceProblem(str(log), one_line(str(exc)), unusable=garbage)]
        except (KernelTracerError, OSError) as exc:
            return [], [SourceProblem(str(log), one_line(str(exc)), unusable=True)]
        rank = _rank_of(log.name)
        return _read_intermediate_tree(inter, str(log), rank, budget), []


def _read_intermediate_tree(
    inter: Path, source: str, rank: int | None, budget: TextBudget | None
) -> list[LogHealth]:
    manifest = orjson.loads((inter / "manifest.json").read_bytes())
    if manifest.get("parse_mode") == "multi_rank":
        return [
            _log_health(source, int(r), inter / sub, budget)
            for r, sub in sorted(manifest.get("rank_dirs", {}).items(), key=lambda kv: int(kv[0]))
        ]
    ranks = manifest.get("ranks") or []
    if rank is None and len(ranks) == 1 and isinstance(ranks[0], int):
        rank = ranks[0]
    return [_log_health(source, rank, inter, budget, manifest)]


def _log_health(
    source: str,
    rank: int | None,
    inter: Path,
    budget: TextBudget | None,
    manifest: dict[str, Any] | None = None,
) -> LogHealth:
    if manifest is None:
        try:
            manifest = orjson.loads((inter / "manifest.json").read_bytes())
        except (OSError, orjson.JSONDecodeError):
            manifest = {}
    tail = manifest.get("tail") if isinstance(manifest, dict) else None
    return LogHealth(source, rank, read_intermediate(inter, budget), _cut(tail))


def _cut(tail: Any) -> list[str]:
    """What the parse's ``tail`` says about a cut end (an intermediate written before it
    was recorded says nothing)."""
    if not isinstance(tail, dict):
        return []
    out = []
    if tail.get("last_payload_cut") is True:
        out.append(f"the payload of the record at line {tail.get('last_record_line')} is cut short")
    if tail.get("last_line_cut") is True:
        out.append(f"its last line ({tail.get('lines')}) has no end and does not parse")
    return out


def _rank_of(name: str) -> int | None:
    m = _RANK.search(name)
    return int(m.group(1)) if m else None
