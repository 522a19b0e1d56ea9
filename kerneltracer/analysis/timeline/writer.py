"""Write the timeline reports for one or more traces (one per rank) into a directory.

Layout::

    OUT/summary.json, summary.md          ranks table + stragglers, list of per-trace outputs
    OUT/<trace-stem>/report.json|.md|.html
    OUT/<trace-stem>/inferscope_trace.json.gz   (unless convert=False)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kerneltracer.analysis.timeline.analyses.ranks import rank_table
from kerneltracer.analysis.timeline.load.loader import LoadProgress
from kerneltracer.analysis.timeline.pipeline import (
    OpsOptions,
    TraceAnalysis,
    analyze_file,
    rank_row,
    report_document,
)
from kerneltracer.analysis.timeline.render.markdown import render_markdown, render_rank_summary
from kerneltracer.core.heap import no_cyclic_gc
from kerneltracer.jsonio import atomic_write_json, atomic_write_text

if TYPE_CHECKING:
    import jinja2

_INFERSCOPE_FILE = "inferscope_trace.json.gz"


def _trace_stem(path: Path) -> str:
    name = path.name
    for suffix in (".json.gz", ".json", ".gz"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    # Trace names come from other machines: keep them to one safe path component.
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "trace"
    return safe[:120]


class HtmlTemplate:
    """The HTML report's template, loaded on first need: jinja2 (imported only then) and
    compiling the template cost ~0.1 s, which run_timeline spends while a forked
    InferScope writer still runs, when there is one (``analyze_file(while_writing=…)``,
    ``pipeline.WRITE_FIRST_ROWS``)."""

    def __init__(self) -> None:
        self._template: jinja2.Template | None = None

    def get(self) -> jinja2.Template:
        if self._template is None:
            from kerneltracer.analysis.timeline.render.html import load_template

            self._template = load_template()
        return self._template


def _write_trace_reports(
    a: TraceAnalysis, out_dir: Path, template: HtmlTemplate | None = None
) -> list[Path]:
    from kerneltracer.analysis.timeline.render.html import render_html, timeline_lanes

    html = (template or HtmlTemplate()).get()
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    outputs: dict[str, str] = {}
    if a.inferscope_file is not None:
        outputs["inferscope_trace"] = a.inferscope_file.name
        written.append(a.inferscope_file)
    doc = report_document(a, outputs)
    b = a.bottleneck
    lanes = a.lanes
    if lanes is None:
        lanes = timeline_lanes(a.trace, b.window_start_us, b.window_end_us)
    targets: list[tuple[str, Callable[[Path], None]]] = [
        ("report.json", lambda p: atomic_write_json(p, doc)),
        (
            "report.md",
            lambda p: atomic_write_text(p, render_markdown({**doc, "report_type": "markdown"})),
        ),
        (
            "report.html",
            lambda p: atomic_write_text(
                p, render_html({**doc, "report_type": "html"}, lanes, html)
            ),
        ),
    ]
    for name, write in targets:
        write(out_dir / name)
        written.append(out_dir / name)
    if a.ops is not None and a.ops.attribution.rows.size:  # no GPU work: nothing to attribute
        from kerneltracer.analysis.timeline.render.ops_files import write_ops_files

        written += write_ops_files(a.ops, out_dir, a.trace.path.name)
    return written


def expand_traces(paths: Sequence[Path]) -> list[Path]:
    """Each path as given, a directory replaced by the chrome traces under it (a job's
    ``rank_<r>/`` traces, a folder of Kineto files), in natural order: ``rank_2`` before
    ``rank_10``. Our own InferScope files are not inputs and are left out."""
    out: list[Path] = []
    for path in paths:
        if not path.is_dir():
            out.append(path)
            continue
        # Only here: reading a job's status imports pydantic (~0.1 s) a file never needs.
        from kerneltracer.core.artefacts import ArtefactKind, kind_from_name
        from kerneltracer.core.status import read_status
        from kerneltracer.errors import UsageError

        # A job dir says which of its files are traces; its bookkeeping (_TRACE_STATUS.json)
        # and temp exports (tmp/trace.json) only look like them by name.
        status = read_status(path)
        if status is not None:
            found = [
                path / o.path for o in status.outputs if o.kind == ArtefactKind.CHROME_TRACE.value
            ]
        else:
            found = [
                f
                for f in path.rglob("*")
                if f.is_file()
                and f.name != _INFERSCOPE_FILE
                and kind_from_name(f.relative_to(path).as_posix()) is ArtefactKind.CHROME_TRACE
            ]
        if not found:
            raise UsageError(f"{path}: no chrome trace under it (*.json.gz or *trace*.json files)")
        out += sorted(found, key=lambda f: _natural(f.relative_to(path).as_posix()))
    return out


def _natural(text: str) -> list[tuple[int, int | str]]:
    return [(0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"(\d+)", text) if p]


def run_timeline(
    traces: Sequence[Path],
    out_dir: Path,
    *,
    convert: bool = True,
    include_last_step: bool = False,
    strict: bool = False,
    on_trace: Callable[[Path], None] | None = None,
    on_analysed: Callable[[TraceAnalysis], None] | None = None,
    ops: OpsOptions | None = None,
    load_progress: Callable[[LoadProgress], object] | None = None,
) -> list[Path]:
    """Analyse every trace (file order gives the rank when a trace names none); with
    ``ops``, attribute kernels to ops (ops.csv, kernels_by_op.csv, ops.html per trace).
    ``load_progress`` is called as each trace is read."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    rows = []
    collectives = []
    entries: list[dict[str, Any]] = []
    used: set[str] = set()
    template = HtmlTemplate()
    for i, path in enumerate(traces):
        if on_trace:
            on_trace(path)
        stem = _unique(_trace_stem(path), used)
        inferscope = out_dir / stem / _INFERSCOPE_FILE if convert else None
        a = analyze_file(
            path,
            rank=i,
            inferscope_file=inferscope,
            include_last_step=include_last_step,
            strict=strict,
            while_writing=template.get,
            ops=ops,
            progress=load_progress,
            lanes=True,
        )
        if on_analysed:
            on_analysed(a)
        with no_cyclic_gc():  # the reports' dicts and rows, as in the analysis
            files = _write_trace_reports(a, out_dir / stem, template)
        written += files
        rows.append(rank_row(a))
        if a.collectives is not None:
            collectives.append(a.collectives)
        entries.append(
            {
                "trace": path.name,
                "rank": a.rank,
                "dir": stem,
                "bottleneck": a.bottleneck.bottleneck.type,
                "bad_events": dict(sorted(a.trace.bad_events.items())),
                "attributed_share": a.ops.attribution.attributed_share if a.ops else None,
                "files": [f.relative_to(out_dir).as_posix() for f in files],
            }
        )
        del a  # one trace in memory at a time
    table = rank_table(rows, collectives)
    summary = {"report_version": "1.0", "traces": entries, **table}
    atomic_write_json(out_dir / "summary.json", summary)
    atomic_write_text(out_dir / "summary.md", render_rank_summary(table))
    return [*written, out_dir / "summary.json", out_dir / "summary.md"]


def _unique(stem: str, used: set[str]) -> str:
    candidate, n = stem, 1
    while candidate in used:
        n += 1
        candidate = f"{stem}-{n}"
    used.add(candidate)
    return candidate
