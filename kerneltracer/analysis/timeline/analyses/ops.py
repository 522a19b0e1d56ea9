"""Op attribution for one trace: GPU events attributed to host ops, CUDA graph replays
joined to a capture trace, and the per-op table (:class:`OpsResult`, what the ops files are
written from)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kerneltracer.analysis.timeline.analyses.attribution import METHODS, STATUS_TEXT, Attribution
from kerneltracer.analysis.timeline.analyses.cuda_graphs import GraphJoin
from kerneltracer.analysis.timeline.analyses.op_table import OpTable


@dataclass
class OpsResult:
    """Attribution and its per-op table for one trace (what the files are written from)."""

    attribution: Attribution
    table: OpTable
    graphs: GraphJoin | None = None  # when a capture trace was given

    def share_text(self) -> str:
        """``83.0% of GPU time attributed to ops; 17.0% inside CUDA graph replays …``."""
        a = self.attribution
        total = a.total_us
        if total <= 0:
            return "no GPU time in this trace: nothing to attribute"
        if a.host_ops == 0:
            return (
                "no CPU ops in this trace (GPU activity only, recorded without CPU "
                f"activity): none of its {total:,.1f} µs of GPU time can be attributed to ops"
            )
        parts = [f"{100 * a.attributed_us / total:.1f}% of GPU time attributed to ops"]
        by_time, by_time_us = a.linked_by_time()
        if by_time:
            parts[0] += (
                f" ({100 * by_time_us / total:.1f}% linked by launch order and time, not by "
                f"correlation id: {by_time} GPU event{'s' if by_time != 1 else ''} share an id "
                "with other launch calls)"
            )
        for status, us in sorted(a.unattributed_us().items(), key=lambda kv: -kv[1]):
            text = STATUS_TEXT[status]
            if status == "graph_replay" and self.graphs is not None:
                # a capture trace was given: say why it did not cover these replays
                why = self.graphs.why_text()
                text = "inside CUDA graph replays the capture trace did not cover" + (
                    f" ({why})" if why else ""
                )
            parts.append(f"{100 * us / total:.1f}% {text}")
        return "; ".join(parts)

    def per_step(self) -> list[dict[str, Any]]:
        """GPU time and attributed GPU time per ProfilerStep (step None: outside steps)."""
        a = self.attribution
        dur, out = a.dur, []
        for step in sorted(set(a.step.tolist())):
            sel = a.step == step
            out.append(
                {
                    "step": step if step >= 0 else None,
                    "gpu_time_us": round(float(dur[sel].sum()), 3),
                    "attributed_us": round(float(dur[sel & (a.status == 0)].sum()), 3),
                }
            )
        return out

    def summary(self, top: int = 20) -> dict[str, Any]:
        a, t = self.attribution, self.table
        methods: dict[str, int] = {}
        for m in a.method.tolist():
            key = METHODS[m] if m >= 0 else "none"
            methods[key] = methods.get(key, 0) + 1
        return {
            "gpu_events": int(a.rows.size),
            "gpu_time_us": round(a.total_us, 3),
            "attributed_us": round(a.attributed_us, 3),
            "attributed_share": None
            if a.attributed_share is None
            else round(a.attributed_share, 6),
            "unattributed_us": {k: round(v, 3) for k, v in a.unattributed_us().items()},
            "text": self.share_text(),
            "links": methods,
            "repeated_correlation": a.repeated_correlation(),
            "cpu_ops": a.host_ops,
            "shapes_recorded": any(d is not None for d in a.instances.dims),
            "device": t.device,
            "unknown_ops": t.unknown_ops,
            "cuda_graphs": None if self.graphs is None else vars(self.graphs),
            "steps": self.per_step(),
            "top_ops": [r.record() for r in t.rows[:top]],
        }


def compute_ops(
    trace: Any,
    *,
    capture: Path | None = None,
    device: str | None = None,
    devices: Path | None = None,
) -> OpsResult:
    """Attribute ``trace`` (a ChromeTrace loaded with ``op_args=True``), join its CUDA
    graph replays to ``capture`` when given, and build the per-op table on ``device``
    (a device-table name; default: the trace's own GPU when the table knows it)."""
    from kerneltracer.analysis.timeline.analyses.attribution import attribute
    from kerneltracer.analysis.timeline.analyses.cuda_graphs import join_capture
    from kerneltracer.analysis.timeline.analyses.op_table import device_key, op_table
    from kerneltracer.analysis.timeline.load.loader import load_chrome_trace, release_free_heap
    from kerneltracer.costmodel import load_devices

    # Only a capture trace's attribution is asked for more instances (by the join): this
    # one's op nesting and row index are freed before the op table is built.
    a = attribute(trace, more_instances=False)
    release_free_heap()  # attribution's freed lookups, before the op table's own
    graphs = None
    if capture is not None:
        graphs = join_capture(a, attribute(load_chrome_trace(capture, op_args=True)))
    key = None if device else device_key(trace.device_properties)
    dev = None
    # A trace of no GPU the table names, on no device asked for, reads no table (PyYAML
    # and pydantic: ~0.1 s of a small trace's run); a user's table is read all the same,
    # so a bad one is refused whatever the trace.
    if device or key is not None or devices is not None:
        table = load_devices(devices)
        dev = table.get(device) if device else table.devices.get(key) if key else None
    return OpsResult(attribution=a, table=op_table(a, dev), graphs=graphs)
