"""Python API: ``parse()`` (stage 1), ``render()`` (stage 2) and ``run()`` (both).

The CLI (``kerneltracer logs``) and the per-job analysis are thin wrappers around these.
Output directories appear atomically (built aside, then renamed into place).
"""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from kerneltracer.analysis.structured_logs.parser import FORMAT_VERSION, parse_log
from kerneltracer.analysis.structured_logs.staging import scratch_root, staged_dir
from kerneltracer.analysis.structured_logs.stats import ParseStats
from kerneltracer.errors import InputFileError, NoRecordsError, UsageError
from kerneltracer.inputguard import check_input_file

if TYPE_CHECKING:
    from kerneltracer.analysis.structured_logs.rendering.base import RenderConfig

_RANK_FILE = re.compile(r"rank_(\d+)")
INTERMEDIATE_SUBDIR = "intermediate"


@dataclass
class ParseResult:
    manifest: dict[str, Any]
    stats: ParseStats
    ranks: list[int] = field(default_factory=list)


@dataclass
class RenderResult:
    files: list[str]
    modules: list[str]


def _rank_logs(directory: Path) -> dict[int, Path]:
    """``dedicated_log_torch_trace_rank_N*.log`` files of a directory, by rank."""
    found: dict[int, Path] = {}
    for path in sorted(directory.iterdir()):
        m = _RANK_FILE.search(path.name)
        if path.is_file() and path.suffix == ".log" and m:
            found.setdefault(int(m.group(1)), path)
    if not found:
        raise UsageError(
            f"{directory} has no per-rank logs "
            "(expected files named like dedicated_log_torch_trace_rank_0.log)"
        )
    return dict(sorted(found.items()))


def parse(
    source: Path, out: Path, *, overwrite: bool = False, write_events: bool = True
) -> ParseResult:
    """Stage 1: a log file (one intermediate) or a directory of rank logs (one per rank).

    ``write_events=False`` leaves out ``by_compile_id/<id>/events.jsonl`` (a second copy of
    every payload) for a reader that needs only ``by_type/`` (compile health).
    """
    source = Path(source)
    if not source.exists():
        raise UsageError(f"log not found: {source}")
    with staged_dir(Path(out), overwrite) as stage:
        return _parse_into(source, stage, write_events=write_events)


def _parse_into(
    source: Path, stage: Path, write_events: bool = True, hash_source: bool = True
) -> ParseResult:
    if not source.is_dir():
        try:
            check_input_file(source, "log")  # a device or FIFO is no log and no rank dir
        except InputFileError as exc:
            raise UsageError(str(exc)) from None
    if source.is_file():
        manifest = parse_log(source, stage, write_events=write_events, hash_source=hash_source)
        stats = _stats(manifest)
        if not stats.ok:
            raise NoRecordsError(source, stats)
        return ParseResult(manifest, stats, manifest["ranks"])
    logs = _rank_logs(source)
    total = ParseStats()
    counts: dict[str, int] = {}
    for rank, path in logs.items():
        sub = stage / f"rank_{rank}"
        sub.mkdir()
        m = parse_log(path, sub, rank=rank, write_events=write_events, hash_source=hash_source)
        total.merge(_stats(m))
        for k, v in m["envelope_counts"].items():
            counts[k] = counts.get(k, 0) + v
    if not total.ok:
        raise NoRecordsError(source, total)
    manifest = {
        "version": FORMAT_VERSION,
        "generated_at": "",
        "source_file": str(source),
        "source_file_hash": "",
        "total_envelopes": total.ok,
        "envelope_counts": counts,
        "artifact_counts": {},
        "compile_ids": [],
        "compile_id_display": {},
        "string_table_entries": 0,
        "parse_mode": "multi_rank",
        "ranks": list(logs),
        "rank_dirs": {str(r): f"rank_{r}" for r in logs},
        "stats": total.as_dict(),
        "files": {"by_type": [], "by_compile_id": []},
        "has_events": write_events,
    }
    (stage / "manifest.json").write_bytes(
        orjson.dumps(manifest, option=orjson.OPT_INDENT_2) + b"\n"
    )
    return ParseResult(manifest, total, list(logs))


def _stats(manifest: dict[str, Any]) -> ParseStats:
    raw = dict(manifest["stats"])
    return ParseStats(**raw)


def render(
    inter: Path,
    out: Path,
    *,
    modules: list[str] | None = None,
    skip_modules: list[str] | tuple[str, ...] = (),
    export: bool = False,
    overwrite: bool = False,
    custom_header_html: str = "",
) -> RenderResult:
    """Stage 2: render the intermediate ``inter`` into ``out`` with the chosen modules."""
    from kerneltracer.analysis.structured_logs.rendering.base import RenderConfig
    from kerneltracer.analysis.structured_logs.rendering.registry import select_modules

    inter = Path(inter)
    if not (inter / "manifest.json").is_file():
        raise UsageError(
            f"{inter} is not an intermediate directory (no manifest.json); "
            "run `kerneltracer logs parse` first"
        )
    selected = select_modules(export, modules, skip_modules)
    config = RenderConfig(export=export, custom_header_html=custom_header_html)
    with staged_dir(Path(out), overwrite) as stage:
        return _render_into(inter, stage, selected, config)


def _render_into(
    inter: Path, stage: Path, selected: list[Any], config: RenderConfig
) -> RenderResult:
    # The renderers (jinja2 and the page modules) only here: compile-health parses logs
    # through this module and renders no tlparse page.
    from kerneltracer.analysis.structured_logs.rendering.base import RenderContext
    from kerneltracer.analysis.structured_logs.rendering.multi_rank import (
        RankView,
        _artifact_sequence,
        write_multi_rank_index,
    )
    from kerneltracer.analysis.structured_logs.rendering.registry import MULTI_RANK
    from kerneltracer.analysis.structured_logs.rendering.runner import render_one

    manifest = orjson.loads((inter / "manifest.json").read_bytes())
    if manifest.get("parse_mode") != "multi_rank":
        report = render_one(inter, stage, selected, config)
        return RenderResult(report.files, report.modules)
    views: list[RankView] = []
    files: list[str] = []
    for rank_s, sub in manifest["rank_dirs"].items():
        rank = int(rank_s)
        (stage / f"rank_{rank}").mkdir()
        report = render_one(inter / sub, stage / f"rank_{rank}", selected, config)
        files.extend(f"rank_{rank}/{f}" for f in report.files)
        ctx = RenderContext(inter / sub, stage / f"rank_{rank}", config)
        view = RankView(
            rank,
            inter / sub,
            ctx,
            failures=sum(1 for s in ctx.summaries.values() if s["has_failure"]),
        )
        view.sequence = _artifact_sequence(ctx)
        views.append(view)
    files.extend(write_multi_rank_index(stage, views))
    return RenderResult(files, [m.name for m in selected] + [MULTI_RANK])


def run(
    source: Path,
    out: Path,
    *,
    keep_intermediate: bool = False,
    only_intermediate: bool = False,
    modules: list[str] | None = None,
    skip_modules: list[str] | tuple[str, ...] = (),
    export: bool = False,
    overwrite: bool = False,
) -> tuple[ParseResult, RenderResult | None]:
    """Parse then render; the intermediate is a temp dir unless kept (``OUT/intermediate``)."""
    source, out = Path(source), Path(out)
    if only_intermediate:
        return parse(source, out, overwrite=overwrite), None
    if not source.exists():
        raise UsageError(f"log not found: {source}")
    from kerneltracer.analysis.structured_logs.rendering.base import RenderConfig
    from kerneltracer.analysis.structured_logs.rendering.registry import select_modules

    selected = select_modules(export, modules, skip_modules)
    config = RenderConfig(export=export)
    with staged_dir(out, overwrite) as stage:
        # A kept intermediate is renamed into OUT: it must be on OUT's filesystem.
        scratch = None if keep_intermediate else scratch_root(_source_bytes(source))
        inter = Path(tempfile.mkdtemp(prefix=".intermediate.", dir=scratch or stage.parent))
        try:
            # events.jsonl repeats every payload; skip it when nothing will read it.
            needs_events = keep_intermediate or any(
                f.kind == "events" for m in selected for f in m.required_inputs()
            )
            # A throw-away intermediate: nothing reads its source hash.
            parsed = _parse_into(
                source, inter, write_events=needs_events, hash_source=keep_intermediate
            )
            rendered = _render_into(inter, stage, selected, config)
            if keep_intermediate:
                inter.rename(stage / INTERMEDIATE_SUBDIR)
        finally:
            shutil.rmtree(inter, ignore_errors=True)
    return parsed, rendered


def _source_bytes(source: Path) -> int:
    """A size for choosing the scratch dir; 0 for what is neither a file nor a folder (a
    device, a FIFO): the parse refuses those with the reason, not this."""
    try:
        if source.is_file():
            return source.stat().st_size
        if source.is_dir():
            return sum(p.stat().st_size for p in source.iterdir() if p.is_file())
    except OSError:
        pass
    return 0
