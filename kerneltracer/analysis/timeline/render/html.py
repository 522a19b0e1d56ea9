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
from kerneltracer.analysis.timeline.model.arrays import sorted_unique
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
    for device, stream in _pairs(trace.device, trace.stream, gpu):
        sel = gpu & (trace.device == device) & (trace.stream == stream)
        lanes.append(_lane(trace, sel, f"GPU {device} stream {stream}", "gpu", lo, hi))
    for pid, tid in _pairs(trace.pid, trace.tid, cpu):
        sel = cpu & (trace.pid == pid) & (trace.tid == tid)
        pid_label, tid_label = trace.thread_labels[pid], trace.thread_labels[tid]
        name = trace.thread_names.get((pid_label, tid_label), "")
        label = f"host {pid_label}/{tid_label}" + (f" {name}" if name else "")
        lanes.append(_lane(trace, sel, label, "cpu", lo, hi))
    lanes.sort(key=lambda lane: (lane.kind != "gpu", -lane.busy_pct))
    return lanes[:_MAX_LANES]


def _pairs(a: np.ndarray, b: np.ndarray, sel: np.ndarray) -> list[tuple[int, int]]:
    """The distinct ``(a, b)`` of the rows in ``sel``, sorted: a set of Python tuples made
    from every host row was most of the lanes' ~80 MiB peak at 3M events, for the few
    dozen lanes there are."""
    out: list[tuple[int, int]] = []
    rows = np.flatnonzero(sel)
    firsts = a[rows]
    for x in sorted_unique(firsts).tolist():
        out += [(x, y) for y in sorted_unique(b[rows[firsts == x]]).tolist()]
    return out


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
