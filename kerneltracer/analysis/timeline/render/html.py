"""Self-contained HTML report: timeline lanes (SVG), breakdown chart, tables.

Lanes show the union of busy time per GPU stream and per host thread, coalesced to the
page's resolution so that a million-event trace still renders as a few thousand rects.
All text goes through jinja2 autoescaping; no external scripts, fonts or styles.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jinja2
import numpy as np

from kerneltracer.analysis.timeline.load.loader import PH_COMPLETE, ChromeTrace
from kerneltracer.analysis.timeline.model.categories import CPU_BUSY, GPU_ACTIVITY
from kerneltracer.analysis.timeline.model.intervals import clip, merge
from kerneltracer.core.templates import html_environment

_RESOLUTION = 1500  # distinct x positions across the window
_MAX_LANES = 40
_COLORS = {
    "gpu_compute": "#2e7d32",
    "gpu_communication": "#6a1b9a",
    "h2d_copy": "#ef6c00",
    "d2h_copy": "#c62828",
    "gpu_memory_other": "#f9a825",
    "cpu_sync": "#8d6e63",
    "cpu_runtime": "#1565c0",
    "cpu_compute": "#64b5f6",
    "idle": "#cfd8dc",
}


@dataclass
class Lane:
    label: str
    kind: str  # gpu | cpu
    busy_pct: float
    rects: list[tuple[float, float]]  # (x %, width %)


def timeline_lanes(trace: ChromeTrace, lo: float, hi: float) -> list[Lane]:
    span = hi - lo
    if span <= 0:
        return []
    complete = trace.ph == PH_COMPLETE
    gpu = complete & trace.category_mask(GPU_ACTIVITY)
    cpu = complete & trace.category_mask(CPU_BUSY)
    lanes: list[Lane] = []
    for key in sorted(
        set(zip(trace.device[gpu].tolist(), trace.stream[gpu].tolist(), strict=True))
    ):
        sel = gpu & (trace.device == key[0]) & (trace.stream == key[1])
        lanes.append(_lane(trace, sel, f"GPU {key[0]} stream {key[1]}", "gpu", lo, hi))
    for pid, tid in sorted(set(zip(trace.pid[cpu].tolist(), trace.tid[cpu].tolist(), strict=True))):
        sel = cpu & (trace.pid == pid) & (trace.tid == tid)
        pid_label, tid_label = trace.thread_labels[pid], trace.thread_labels[tid]
        name = trace.thread_names.get((pid_label, tid_label), "")
        label = f"host {pid_label}/{tid_label}" + (f" {name}" if name else "")
        lanes.append(_lane(trace, sel, label, "cpu", lo, hi))
    lanes.sort(key=lambda lane: (lane.kind != "gpu", -lane.busy_pct))
    return lanes[:_MAX_LANES]


def _lane(trace: ChromeTrace, sel: np.ndarray, label: str, kind: str, lo: float, hi: float) -> Lane:
    span = hi - lo
    s, e = merge(*clip(trace.ts[sel], trace.end[sel], lo, hi))
    busy = float(np.sum(e - s)) if s.size else 0.0
    # Snap to the page resolution: neighbours closer than one pixel merge into one rect.
    px = span / _RESOLUTION
    s_px = np.floor((s - lo) / px)
    e_px = np.maximum(np.ceil((e - lo) / px), s_px + 1)
    ms, me = merge(s_px, e_px + 1e-9)
    rects = [
        (100.0 * a / _RESOLUTION, 100.0 * (b - a) / _RESOLUTION)
        for a, b in zip(ms.tolist(), me.tolist(), strict=True)
    ]
    return Lane(label, kind, round(100.0 * busy / span, 2), rects)


def load_template() -> jinja2.Template:
    """The report's compiled template (compiling it is most of rendering a report)."""
    return html_environment("kerneltracer.analysis.timeline.render").get_template("report.html.j2")


def render_html(
    doc: dict[str, Any], lanes: list[Lane], template: jinja2.Template | None = None
) -> str:
    template = template or load_template()
    return template.render(doc=doc, lanes=lanes, colors=_COLORS)
