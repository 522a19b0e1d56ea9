"""One trace file end to end: load, analyse, convert, validate; and the report document."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kerneltracer.analysis.timeline.analyses.ranks import RankRow
from kerneltracer.analysis.timeline.load.loader import (
    ChromeTrace,
    LoadProgress,
    count_text,
    load_chrome_trace,
    release_free_heap,
)
from kerneltracer.analysis.timeline.model.validate import ValidationReport
from kerneltracer.analysis.timeline.render.forked import ForkedCall
from kerneltracer.analysis.timeline.render.inferscope_file import write_inferscope
from kerneltracer.core.heap import no_cyclic_gc, release_after

if TYPE_CHECKING:
    from kerneltracer.analysis.timeline.analyses.gpu_breakdown import (
        CommCompOverlap,
        KernelBreakdown,
        TemporalBreakdown,
    )
    from kerneltracer.analysis.timeline.analyses.multirank import RankCollectives
    from kerneltracer.analysis.timeline.analyses.ops import OpsResult
    from kerneltracer.analysis.timeline.model.results import BottleneckResult, StepResult
    from kerneltracer.analysis.timeline.render.html import Lane

_REPORT_VERSION = "1.0"
# From this many rows the InferScope file is written before the analyses, in this
# process, instead of by a forked child beside them: from any. The child's conversion
# state (~250 MiB at 3M events) and the parent's pages it reads (counted again in its
# resident size) peaked at the same moment as op attribution; written first, each peaks
# alone. At 218k events the forked tree peaked at 186-192 MiB, in-process at 140 MiB, for
# the same CPU time: the fork only bought wall time (its overlap, ~0.8 s on two idle
# cores at 218k events), and memory and CPU are what the timeline is held to. A caller
# that has cores and memory to spare can raise it to fork below that many rows.
WRITE_FIRST_ROWS = 0


@dataclass
class TraceAnalysis:
    trace: ChromeTrace
    rank: int
    bottleneck: BottleneckResult
    steps: list[StepResult]
    temporal: TemporalBreakdown | None
    per_device: list[dict[str, Any]]
    kernels: KernelBreakdown
    inferscope_file: Path | None
    validation: ValidationReport | None
    ops: OpsResult | None = None  # op attribution (None when not asked for)
    overlap: CommCompOverlap | None = None  # HTA's comm / comp overlap (None: no GPU work)
    collectives: RankCollectives | None = None  # for the cross-rank waits and stragglers
    # The HTML report's timeline lanes (with ``analyze_file(lanes=True)``).
    lanes: list[Lane] | None = None


@dataclass(frozen=True)
class OpsOptions:
    """Op attribution settings: a capture trace for CUDA graph replays, the roofline device
    (a device-table name; None: the trace's GPU) and a user device table."""

    capture: Path | None = None
    device: str | None = None
    devices: Path | None = None


def analyze_file(
    path: Path | str,
    rank: int | None = None,
    *,
    inferscope_file: Path | None = None,
    include_last_step: bool = False,
    strict: bool = False,
    while_writing: Callable[[], object] | None = None,
    ops: OpsOptions | None = None,
    progress: Callable[[LoadProgress], object] | None = None,
    lanes: bool = False,
) -> TraceAnalysis:
    """Everything the reports need for one trace; ``rank`` defaults to the trace's own.

    With ``inferscope_file`` the InferScope trace is written there and validated; with
    ``strict`` any malformed event is an error instead of a counted, dropped event.
    ``while_writing`` runs once the analyses are done, before waiting for the file: the
    writing takes longer, so work the caller needs next (loading templates) is free there.
    With ``ops`` the kernels are attributed to ops (``analysis.ops``; the trace's flows are
    settled, ``attribution.settle_flows``: ``analysis.trace.flow_launch``). ``progress`` is
    called as the trace is read (see :func:`load_chrome_trace`). With ``lanes`` the HTML
    report's timeline lanes are made too (``analysis.lanes``).
    """
    with no_cyclic_gc():
        return _analyze_file(
            path,
            rank,
            inferscope_file=inferscope_file,
            include_last_step=include_last_step,
            strict=strict,
            while_writing=while_writing,
            ops=ops,
            progress=progress,
            lanes=lanes,
        )


def _analyze_file(
    path: Path | str,
    rank: int | None,
    *,
    inferscope_file: Path | None,
    include_last_step: bool,
    strict: bool,
    while_writing: Callable[[], object] | None,
    ops: OpsOptions | None,
    progress: Callable[[LoadProgress], object] | None,
    lanes: bool,
) -> TraceAnalysis:
    trace = load_chrome_trace(path, strict=strict, op_args=ops is not None, progress=progress)
    if ops is not None:
        from kerneltracer.analysis.timeline.analyses.attribution import settle_flows

        settle_flows(trace)  # not carried through the writer and the analyses (27 MiB at 3M)
        release_free_heap()  # the flows' and the settling's, before the writer's
    writer: ForkedCall[ValidationReport] | None = None
    validation: ValidationReport | None = None
    if inferscope_file is not None and len(trace) >= WRITE_FIRST_ROWS:
        validation = write_inferscope(trace, inferscope_file)
        release_free_heap()  # the writer's freed chunks, before the analyses allocate
    elif inferscope_file is not None:
        target = inferscope_file
        writer = ForkedCall(lambda: write_inferscope(trace, target))
    # Imported only now (pydantic models, ~0.2 s): while the child writes the file.
    from kerneltracer.analysis.timeline.analyses.bottleneck import analyze_steps, analyze_trace
    from kerneltracer.analysis.timeline.analyses.category_rows import categorize
    from kerneltracer.analysis.timeline.analyses.gpu_breakdown import (
        comm_comp_overlap,
        kernel_breakdown,
        per_device_temporal,
        select_gpu_work,
        temporal_breakdown,
    )
    from kerneltracer.analysis.timeline.analyses.multirank import rank_collectives

    cats = categorize(trace)
    work = select_gpu_work(trace, include_last_step=include_last_step)
    # Their whole-trace masks, freed, sat as holes under the rows they keep (~75 MiB at
    # 3M events): handed back before the window analyses make their own temporaries.
    release_free_heap()
    own_rank = trace.rank if trace.rank is not None else (rank or 0)
    analysis = TraceAnalysis(
        trace=trace,
        rank=own_rank,
        bottleneck=analyze_trace(trace, cats),
        steps=analyze_steps(trace, cats),
        temporal=temporal_breakdown(work),
        per_device=per_device_temporal(work),
        kernels=kernel_breakdown(work, trace.names),
        inferscope_file=inferscope_file,
        validation=validation,
        overlap=comm_comp_overlap(work),
        collectives=rank_collectives(trace, own_rank),
    )
    # Whole-trace masks and the GPU work selection (~85 MiB at 3M events): the results
    # above hold what they need, and op attribution peaks next.
    del cats, work
    # The window analyses' freed temporaries (~40 MiB of resident holes at 3M events),
    # handed back before the lanes' own.
    release_after(len(trace))
    if lanes:
        from kerneltracer.analysis.timeline.render.html import timeline_lanes

        # Here, not when the report is written: their per-thread temporaries (~80 MiB at
        # 3M events) then came on top of the op attribution's instances.
        b = analysis.bottleneck
        analysis.lanes = timeline_lanes(trace, b.window_start_us, b.window_end_us)
    if ops is not None:
        from kerneltracer.analysis.timeline.analyses.ops import compute_ops

        release_free_heap()

        analysis.ops = compute_ops(
            trace, capture=ops.capture, device=ops.device, devices=ops.devices
        )
        release_free_heap()
    if while_writing is not None:
        while_writing()
    if writer is not None:
        analysis.validation = writer.result()
    return analysis


def rank_row(a: TraceAnalysis) -> RankRow:
    s = a.bottleneck.summary
    pct = {b.category: b.percentage for b in a.bottleneck.timeline_breakdown}
    latency = s.end_to_end_latency_us
    return RankRow(
        rank=a.rank,
        source_file=a.trace.path.name,
        end_to_end_latency_us=latency,
        mean_step_us=(sum(st.duration_us for st in a.steps) / len(a.steps)) if a.steps else None,
        steps=len(a.steps),
        gpu_busy_pct=round(100.0 * s.total_gpu_time_us / latency, 2)
        if s.has_gpu and latency
        else None,
        gpu_idle_pct=round(100.0 * s.gpu_idle_us / latency, 2)
        if s.gpu_idle_us is not None and latency
        else None,
        compute_us=a.temporal.compute_us if a.temporal else None,
        communication_pct=pct.get("gpu_communication") if s.has_gpu else None,
        bottleneck=a.bottleneck.bottleneck.type,
        temporal_breakdown=a.temporal.to_dict() if a.temporal else None,
        comm_comp_overlap_pct=a.overlap.overlap_pct if a.overlap else None,
    )


def report_document(a: TraceAnalysis, outputs: dict[str, str] | None = None) -> dict[str, Any]:
    """The JSON report (InferScope's report model, plus HTA-style per-rank breakdowns)."""
    b = a.bottleneck
    return {
        "report_type": "json",
        "report_version": _REPORT_VERSION,
        "title": f"InferScope Performance Report: {a.trace.path.name}",
        "timestamp": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "source": {
            "file": a.trace.path.name,
            "rank": a.rank,
            "events": len(a.trace),
            "bad_events": dict(sorted(a.trace.bad_events.items())),
            "skipped_events": dict(sorted(a.trace.skipped_events.items())),
            "gpu_model": a.trace.device_properties[0].get("name")
            if a.trace.device_properties
            else None,
            "float_timestamps": a.trace.float_timestamps,
        },
        "summary": _summary_text(a),
        "gpu_time": _gpu_time_figures(a),
        "analysis": b.to_json(),
        "steps": [st.to_json() for st in a.steps],
        "ranks": [
            {
                "rank": a.rank,
                "temporal_breakdown": a.temporal.to_dict() if a.temporal else None,
                "temporal_breakdown_per_device": a.per_device,
                "kernel_breakdown": a.kernels.to_dict(),
                "comm_comp_overlap": a.overlap.to_dict() if a.overlap else None,
                "note": None
                if a.temporal
                else "no GPU kernels in this trace: GPU breakdowns are empty",
            }
        ],
        "validation": a.validation.to_dict() if a.validation else None,
        "op_attribution": a.ops.summary(top=10) if a.ops else None,
        "timeline_sections": [
            {
                "title": "Timeline Breakdown",
                "data": [e.to_json() for e in b.timeline_breakdown],
            }
        ],
        "recommendations": [
            {
                "title": s.action,
                "description": s.rationale,
                "impact": f"Estimated improvement: up to {s.estimated_improvement_percent:g}%",
                "priority": s.priority,
                "evidence": s.evidence,
            }
            for s in b.suggestions
        ],
        "outputs": outputs or {},
    }


def _gpu_time_figures(a: TraceAnalysis) -> list[dict[str, Any]]:
    """Every GPU time total the report shows, each with its one definition and window: they
    differ by design (a span holds idle gaps, a union counts overlaps once, a sum counts
    each stream), so the page names each instead of showing four unlabelled totals."""
    t = a.temporal
    if t is None:
        return []
    hta_window = "last ProfilerStep excluded" if t.last_step_excluded else "whole trace"
    rounded = (
        "; ns timestamps rounded inwards to whole µs, as HTA does"
        if a.trace.float_timestamps
        else ""
    )
    out = [
        {
            "figure": "GPU span",
            "us": round(t.kernel_time_us, 3),
            "window": hta_window,
            "definition": "first GPU start to last GPU end, idle gaps included (HTA's kernel "
            f"time): idle + compute + non-compute{rounded}",
        },
        {
            "figure": "GPU busy (union)",
            "us": round(t.busy_us, 3),
            "window": hta_window,
            "definition": "time any kernel, memcpy, memset or stream sync runs, overlaps "
            "counted once: compute + non-compute; the kernel-type rows add up to it less the "
            f"syncs{rounded}",
        },
        {
            "figure": "GPU kernels busy (union)",
            "us": round(a.bottleneck.summary.total_gpu_time_us, 3),
            "window": "whole trace",
            "definition": "time any compute or communication kernel runs, overlaps counted "
            "once; no memcpy, memset or sync",
        },
    ]
    if a.ops is not None and a.ops.attribution.rows.size:
        out.append(
            {
                "figure": "GPU time summed",
                "us": round(a.ops.attribution.total_us, 3),
                "window": "whole trace",
                "definition": "every kernel, memcpy and memset's duration added: overlapping "
                "streams count on each; the per-op rows (ops.csv) add up to it",
            }
        )
    return out


def _summary_text(a: TraceAnalysis) -> str:
    b = a.bottleneck
    s = b.summary
    kind = b.bottleneck.type.replace("_", "-")
    text = (
        f"{a.trace.path.name} (rank {a.rank}): {s.end_to_end_latency_us / 1000:.2f} ms traced, "
        f"{kind} (confidence {b.bottleneck.confidence:.2f}), "
        f"primary cause {b.bottleneck.primary_cause}."
    )
    if a.temporal:
        t = a.temporal
        text += (
            f" GPU: {t.compute_pct:.1f}% compute, {t.non_compute_pct:.1f}% non-compute, "
            f"{t.idle_pct:.1f}% idle over a {t.kernel_time_us / 1000:.2f} ms GPU span"
            f"{' (last ProfilerStep excluded)' if t.last_step_excluded else ''}."
        )
    else:
        text += " No GPU activity was recorded."
    if a.ops is not None and a.ops.attribution.rows.size:
        text += f" Ops: {a.ops.share_text()}."
    if b.suggestions:
        top = b.suggestions[0]
        text += f" First thing to try: {top.action} (up to {top.estimated_improvement_percent:g}%)."
    if a.trace.bad_count:
        text += f" Dropped {count_text(a.trace.bad_events, 'malformed event')}."
    return text
