"""What the report's charts show, from the collected run and its coverage.

Numbers are picked here and drawn by :mod:`.charts`. A time is *measured* only when a
profiler job of that model variant recorded it; otherwise it is the time estimated from
shapes (costmodel's roofline lower bound) and every chart says so.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from markupsafe import Markup

from kerneltracer.core.artefacts import ArtefactKind
from kerneltracer.core.identity import Variant
from kerneltracer.core.layout import RunPaths
from kerneltracer.report.charts import (
    Bar,
    Span,
    bar_chart,
    heatmap,
    histogram,
    stacked_bars,
    track_view,
)
from kerneltracer.report.collect import Job, ModelRow, RunData
from kerneltracer.report.views import fmt_duration, fmt_mib

if TYPE_CHECKING:
    from kerneltracer.coverage import Coverage, OpUse

TOP_OPS = 15
_WIDE = 1280  # track views: as wide as a 1400 px window allows
_MAX_TIMELINE_JOBS = 1000
_HEAT_OPS = 30
_HEAT_MODELS = 60
_COMPILE_PHASES = ("dynamo", "aot_autograd", "inductor", "codegen")
MEASURED = "measured"
ESTIMATED = "estimated"


def _fmt_us(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.2f} s"
    if us >= 1e3:
        return f"{us / 1e3:.2f} ms"
    return f"{us:.1f} µs" if us >= 0.1 else f"{us:.3g} µs"


def _fmt_count(n: float) -> str:
    return f"{n:,.0f}"


# --- op naming -------------------------------------------------------------------------


def dispatch_name(op: str, known: dict[str, list[str]]) -> str:
    """The dispatch (overload) name of a profiler op name: ``aten::addmm`` ->
    ``aten.addmm.default`` when the run's dispatch traces know one overload of it, the
    packet ``aten.addmm`` when they know several or none; other names are kept."""
    if "::" not in op:
        return op
    ns, _, name = op.partition("::")
    overloads = known.get(f"{ns}.{name}", [])
    return overloads[0] if len(overloads) == 1 else f"{ns}.{name}"


def overloads_by_packet(ops: Iterable[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for op in ops:
        packet, _, _ = op.rpartition(".")
        if packet and "::" not in op:
            found.setdefault(packet, []).append(op)
    return found


@dataclass(frozen=True)
class NamedOp:
    op: str  # the dispatch overload name (or the name as recorded, when it has no other)
    other: str  # the name the source recorded, when it differs ("" otherwise)
    value: float


def named(ops: Iterable[tuple[str, float]], known: dict[str, list[str]]) -> list[NamedOp]:
    """Rename and merge (several profiler names can map to one packet)."""
    merged: dict[str, tuple[set[str], float]] = {}
    for op, value in ops:
        name = dispatch_name(op, known)
        others, total = merged.get(name, (set(), 0.0))
        if name != op:
            others.add(op)
        merged[name] = (others, total + value)
    out = [NamedOp(n, ", ".join(sorted(o)), v) for n, (o, v) in merged.items()]
    return sorted(out, key=lambda o: (-o.value, o.op))


# --- model page ------------------------------------------------------------------------


@dataclass(frozen=True)
class OpChart:
    label: str  # the model variant's label
    variant: Variant
    time_kind: str  # measured | estimated | "" (no times)
    time_note: str
    time_chart: Markup
    count_chart: Markup


@dataclass(frozen=True)
class ModelOps:
    """The coverage regrouped once per report: each model page takes its slice, instead of
    every page walking the whole fleet's op uses (quadratic at 1,000 models)."""

    cov: Coverage
    known: dict[str, list[str]]
    uses_by_label: dict[str, list[OpUse]]

    @classmethod
    def of(cls, cov: Coverage) -> ModelOps:
        uses: dict[str, list[OpUse]] = defaultdict(list)
        for (label, _), ops in cov.by_job().items():
            uses[label] += ops.values()
        return cls(cov, overloads_by_packet(cov.ops()), dict(uses))


def model_op_charts(ops: ModelOps | None, model: ModelRow) -> list[OpChart]:
    """Per variant of ``model``: top ops by time (measured, else estimated) and by calls."""
    if ops is None:
        return []
    cov, charts = ops.cov, []
    for label, (display, mode, phase) in cov.variants.items():
        if display != model.display:
            continue
        uses = ops.uses_by_label.get(label, [])
        kind, note, times = _times(uses, cov.est_device)
        counts = _counts(uses, cov)
        bars = [Bar(o.op, o.value, _hover(o, _fmt_us)) for o in named(times, ops.known)[:TOP_OPS]]
        count_bars = [Bar(o.op, o.value) for o in named(counts, ops.known)[:TOP_OPS]]
        charts.append(
            OpChart(
                label,
                Variant(mode, phase),
                kind,
                note,
                bar_chart(bars, f"{label}: top ops by {kind} time", _fmt_us),
                bar_chart(count_bars, f"{label}: top ops by calls", _fmt_count),
            )
        )
    return sorted(charts, key=lambda c: c.variant.rank)


def _hover(o: NamedOp, fmt: Callable[[float], str]) -> str:
    text = f"{o.op}: {fmt(o.value)}"
    return text + (f" (profiler: {o.other})" if o.other else "")


def _times(uses: list[OpUse], device: str) -> tuple[str, str, list[tuple[str, float]]]:
    measured = [(u.op, u.self_time_us) for u in uses if u.self_time_us is not None]
    if measured:
        return MEASURED, "self time recorded by the profiler", [(o, t) for o, t in measured if t]
    est = [(u.op, u.est_time_us) for u in uses if u.est_time_us]
    if est:
        note = f"estimated from shapes (roofline lower bound on {device}), not measured"
        return ESTIMATED, note, [(o, float(t)) for o, t in est if t]
    return "", "no profile and no op signatures to estimate time from", []


def _counts(uses: list[OpUse], cov: Coverage) -> list[tuple[str, float]]:
    # Calls from the best source (dispatch: every aten call), never summed across sources.
    have = {u.source for u in uses}
    best = next((s for s in cov.preferred_sources() if s in have), None)
    return [(u.op, float(u.calls)) for u in uses if u.source == best]


# --- coverage page ---------------------------------------------------------------------


def fleet_heatmap(cov: Coverage | None, source: str) -> tuple[Markup, int, int]:
    """Top ops (by the number of model variants that call them, then calls) × model
    variants, shaded by calls; returns the chart and how many ops / variants it shows."""
    if cov is None:
        return Markup(""), 0, 0
    matrix = cov.matrix(source)
    labels = cov.models_for(source)[:_HEAT_MODELS]
    ranked = sorted(matrix, key=lambda op: (-len(matrix[op]), -sum(matrix[op].values()), op))
    ops = ranked[:_HEAT_OPS]
    columns = [(m, _variant_header(cov, m)) for m in labels]
    chart = heatmap(
        ops,
        columns,
        lambda op, m: float(matrix[op][m]) if m in matrix[op] else None,
        f"ops × models: calls ({source})",
        lambda v: f"{v:,.0f} calls",
    )
    return chart, len(ops), len(labels)


def _variant_header(cov: Coverage, label: str) -> str:
    display, mode, phase = cov.variant(label)
    return f"{display} · {mode} · {phase}"


# --- index page ------------------------------------------------------------------------


@dataclass(frozen=True)
class RunCharts:
    durations: Markup
    rss: Markup
    compile_phases: Markup
    timeline: Markup
    timeline_shown: int = 0
    timeline_of: int = 0  # set when the timeline shows only the longest jobs


def run_charts(run: RunData) -> RunCharts:
    ran = [j for j in run.jobs if j.duration_s is not None and j.status not in ("skipped",)]
    return RunCharts(
        durations=histogram([float(j.duration_s or 0) for j in ran], "job durations", fmt_duration),
        rss=histogram(
            [float(j.peak_rss_bytes) for j in ran if j.peak_rss_bytes],
            "peak RSS per job",
            lambda b: fmt_mib(int(b)),
        ),
        compile_phases=_compile_chart(run),
        timeline=timeline_chart(ran),
        timeline_shown=min(len(ran), _MAX_TIMELINE_JOBS),
        timeline_of=len(ran) if len(ran) > _MAX_TIMELINE_JOBS else 0,
    )


def _compile_chart(run: RunData) -> Markup:
    rows = []
    for job in run.jobs:
        phases = compile_phases(run.run_dir, job)
        if phases:
            rows.append((f"{job.model}{job.variant.suffix} · {job.tracer}", phases))
    return stacked_bars(rows, _COMPILE_PHASES, "compile time by phase", fmt_duration)


def compile_phases(run_dir: Path, job: Job) -> dict[str, float]:
    """Dynamo / AOTAutograd / Inductor lowering / code generation seconds of a compile job,
    summed over its frames, from the compile summary the tracer wrote."""
    summary = next((o for o in job.outputs if o.kind == ArtefactKind.COMPILE_SUMMARY), None)
    if summary is None or job.status != "ok":
        return {}
    try:
        doc = orjson.loads((RunPaths(run_dir).job(job.key).dir / summary.path).read_bytes())
        frames = [f for f in doc.get("frames") or [] if isinstance(f, dict)]
    except (OSError, orjson.JSONDecodeError, AttributeError):
        return {}
    out = dict.fromkeys(_COMPILE_PHASES, 0.0)
    for f in frames:
        whole, backend = _num(f, "entire_frame_compile_time_s"), _num(f, "backend_compile_time_s")
        inductor, codegen = _num(f, "inductor_compile_time_s"), _num(f, "code_gen_time_s")
        out["dynamo"] += max(whole - backend, 0.0)
        out["aot_autograd"] += max(backend - inductor, 0.0)
        out["inductor"] += max(inductor - codegen, 0.0)
        out["codegen"] += codegen
    return out if any(out.values()) else {}


def _num(d: dict[str, object], key: str) -> float:
    v = d.get(key)
    return float(v) if isinstance(v, int | float) else 0.0


def timeline_chart(jobs: list[Job]) -> Markup:
    """The run's jobs over wall time, one track per concurrent worker slot."""
    timed = []
    for j in jobs:
        start, end = _ts(j.started_at), _ts(j.finished_at)
        if start is not None and end is not None and end >= start:
            timed.append((start, end, j))
    if not timed:
        return Markup("")
    timed.sort(key=lambda t: t[0])
    origin = timed[0][0]
    free_at: list[float] = []  # per slot, when it is free again
    spans = []
    for start, end, j in timed:
        slot = next((i for i, t in enumerate(free_at) if t <= start), len(free_at))
        if slot == len(free_at):
            free_at.append(end)
        free_at[slot] = end
        label = f"{j.model}{j.variant.suffix} · {j.tracer}"
        spans.append(
            Span(
                f"worker {slot + 1}",
                start - origin,
                end - origin,
                label,
                f"s-{j.status}",
                f"{label}: {j.status}, {fmt_duration(end - start)}",
            )
        )
    if len(spans) > _MAX_TIMELINE_JOBS:  # the longest: a fleet's picture, not its list
        spans = sorted(spans, key=lambda s: s.start - s.end)[:_MAX_TIMELINE_JOBS]
    return track_view(spans, "jobs over the run's wall time", fmt_duration, width=_WIDE)


def _ts(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError:
        return None


# --- model page: a profiled step as tracks ---------------------------------------------

_MAX_TRACE_BYTES = 32 << 20  # larger traces: the timeline analysis's page, not the report
_MAX_SPANS = 3000
_MAX_DEPTH = 4
_TRACK_CATEGORIES = frozenset({"cpu_op", "user_annotation", "kernel", "gpu_memcpy", "gpu_memset"})


def op_timeline(run_dir: Path, job: Job) -> Markup:
    """The ops of one profiled step (the last ``ProfilerStep#``, else the whole trace) on
    tracks per thread or GPU stream and nesting depth, zoomable. Empty when the job has no
    chrome trace, or one too large to draw in a page."""
    from kerneltracer.analysis.timeline.load.loader import PH_COMPLETE, load_chrome_trace
    from kerneltracer.errors import TraceLoadError

    ref = next((o for o in job.outputs if o.kind == ArtefactKind.CHROME_TRACE), None)
    if ref is None or job.status != "ok" or job.weights == "fake":
        return Markup("")
    path = RunPaths(run_dir).job(job.key).dir / ref.path
    try:
        if path.stat().st_size > _MAX_TRACE_BYTES:
            return Markup("")
        trace = load_chrome_trace(path)
    except (OSError, TraceLoadError, ValueError):
        return Markup("")
    names = trace.names
    rows = [
        i
        for i in range(len(trace))
        if trace.ph[i] == PH_COMPLETE and trace.categories[trace.cat[i]] in _TRACK_CATEGORIES
    ]
    steps = [i for i in rows if names[trace.name[i]].startswith("ProfilerStep#")]
    lo, hi = (trace.ts[steps[-1]], trace.end[steps[-1]]) if steps else (None, None)
    if lo is not None:
        rows = [i for i in rows if trace.ts[i] >= lo and trace.end[i] <= hi]
    # The step itself is the window, not a track.
    rows = [i for i in rows if not names[trace.name[i]].startswith("ProfilerStep#")]
    rows.sort(key=lambda i: (trace.ts[i], -trace.dur[i]))
    spans = _nested_spans(trace, rows)
    if not spans:
        return Markup("")
    if len(spans) > _MAX_SPANS:  # keep the longest: short ones are sub-pixel anyway
        spans = sorted(spans, key=lambda s: s.start - s.end)[:_MAX_SPANS]
    label = f"{job.model} · {job.tracer}: one profiled step"
    return track_view(spans, label, _fmt_us, "us", width=_WIDE)


def _nested_spans(trace: Any, rows: list[int]) -> list[Span]:
    open_ends: dict[str, list[float]] = {}  # per lane: end times of the enclosing events
    origin = float(trace.ts[rows[0]]) if rows else 0.0
    spans = []
    for i in rows:
        gpu = trace.stream[i] >= 0 and trace.categories[trace.cat[i]] != "cpu_op"
        lane = f"s{trace.stream[i]}" if gpu else f"t{trace.thread_labels[trace.tid[i]]}"
        stack = open_ends.setdefault(lane, [])
        start, end = float(trace.ts[i]), float(trace.end[i])
        while stack and stack[-1] <= start:
            stack.pop()
        depth = len(stack)
        stack.append(end)
        name = trace.names[trace.name[i]]
        if depth >= _MAX_DEPTH:
            continue
        spans.append(
            Span(
                f"{lane[:8]} d{depth}",
                start - origin,
                end - origin,
                name,
                "op-gpu" if gpu else "op-cpu",
                f"{name}: {_fmt_us(end - start)}",
            )
        )
    return spans
