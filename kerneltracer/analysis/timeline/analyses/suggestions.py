"""Prioritised suggestions with estimated gains, each backed by the evidence it rests on.

Estimates are upper-bound style: the share of the timeline a fix can remove, scaled by how
much of it such fixes usually recover. They rank actions; they are not promises.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from kerneltracer.analysis.timeline.load.loader import ChromeTrace
from kerneltracer.analysis.timeline.model.arrays import median, unique_codes
from kerneltracer.analysis.timeline.model.categories import memcpy_host_kind
from kerneltracer.analysis.timeline.model.results import (
    Bottleneck,
    BreakdownEntry,
    Suggestion,
    Summary,
)

if TYPE_CHECKING:
    from kerneltracer.analysis.timeline.analyses.category_rows import CategoryRows

_SHORT_KERNEL_US = 10.0


def suggest(
    trace: ChromeTrace,
    cats: CategoryRows,
    breakdown: list[BreakdownEntry],
    summary: Summary,
    bottleneck: Bottleneck,
) -> list[Suggestion]:
    pct = {b.category: b.percentage for b in breakdown}
    out: list[Suggestion] = []
    out += _launch_overhead(trace, cats, pct)
    out += _copies(trace, cats, pct)
    out += _gpu_starved(summary, pct)
    out += _gpu_kernels(trace, cats, pct, bottleneck)
    out += _communication(pct)
    out += _host_only(summary, pct)
    # A suggestion worth nothing measurable here is noise ("up to 0%"), not advice.
    out = [s for s in out if s.estimated_improvement_percent > 0]
    order = {"high": 0, "medium": 1, "low": 2}
    out.sort(key=lambda s: (order[s.priority], -s.estimated_improvement_percent))
    return out


def _make(action: str, rationale: str, gain: float, evidence: list[str]) -> Suggestion:
    gain = round(max(0.0, min(gain, 90.0)), 1)
    priority = "high" if gain >= 10 else "medium" if gain >= 3 else "low"
    return Suggestion(
        priority=priority,
        action=action,
        rationale=rationale,
        estimated_improvement_percent=gain,
        evidence=evidence,
    )


def _launch_overhead(
    trace: ChromeTrace, cats: CategoryRows, pct: dict[str, float]
) -> list[Suggestion]:
    kernels = cats.rows["gpu_compute"]
    if kernels.size == 0:
        return []
    median_us = median(trace.dur[kernels])
    runtime = pct["cpu_runtime"]
    if runtime < 5 and not (median_us < _SHORT_KERNEL_US and kernels.size >= 100):
        return []
    evidence = [
        f"CUDA runtime/driver calls alone take {runtime:.1f}% of the timeline",
        f"{kernels.size} kernels, median duration {median_us:.1f} µs",
    ]
    return [
        _make(
            "Cut kernel-launch overhead: capture the step in CUDA graphs "
            "(torch.compile mode='reduce-overhead') or fuse small kernels",
            "Short kernels finish before the host can launch the next one, so the GPU waits "
            "on launches",
            0.7 * runtime + (0.3 * pct["idle"] if median_us < _SHORT_KERNEL_US else 0.0),
            evidence,
        )
    ]


def _copies(trace: ChromeTrace, cats: CategoryRows, pct: dict[str, float]) -> list[Suggestion]:
    out = []
    h2d = cats.rows["h2d_copy"]
    if pct["h2d_copy"] >= 2 and h2d.size:
        kinds = [memcpy_host_kind(trace.names[n]) for n in trace.name[h2d].tolist()]
        pageable = kinds.count("pageable")
        evidence = [
            f"H2D copies alone take {pct['h2d_copy']:.1f}% of the timeline ({h2d.size} copies)"
        ]
        if pageable:
            evidence.append(f"{pageable} of {h2d.size} H2D copies are from pageable memory")
        out.append(
            _make(
                "Pin host buffers (pin_memory=True) and copy with non_blocking=True, "
                "overlapping H2D with compute; batch many small copies into one",
                "Pageable copies are staged and synchronous; pinned ones run at full PCIe/NVLink "
                "speed and can overlap kernels",
                pct["h2d_copy"] * (0.6 if pageable else 0.4),
                evidence,
            )
        )
    d2h = cats.rows["d2h_copy"]
    if pct["d2h_copy"] >= 2 and d2h.size:
        out.append(
            _make(
                "Avoid synchronous device-to-host reads (.item(), .cpu(), printing tensors) "
                "inside the step; keep results on the GPU or read them once per step",
                "Each D2H read blocks the host until the GPU queue drains",
                pct["d2h_copy"] * 0.5,
                [f"D2H copies take {pct['d2h_copy']:.1f}% of the timeline ({d2h.size} copies)"],
            )
        )
    return out


def _gpu_starved(summary: Summary, pct: dict[str, float]) -> list[Suggestion]:
    if not summary.has_gpu or summary.gpu_idle_us is None or summary.end_to_end_latency_us <= 0:
        return []
    idle = 100.0 * summary.gpu_idle_us / summary.end_to_end_latency_us
    if idle < 20:
        return []
    return [
        _make(
            "Feed the GPU: overlap input preparation with compute (DataLoader workers, "
            "prefetching) and increase the batch size to amortise per-step host work",
            "The GPU has nothing queued for a large part of the step",
            0.5 * min(idle, pct["idle"] + pct["cpu_compute"] + pct["cpu_runtime"]),
            [f"GPU idle for {idle:.1f}% of the timeline"],
        )
    ]


def _gpu_kernels(
    trace: ChromeTrace, cats: CategoryRows, pct: dict[str, float], bottleneck: Bottleneck
) -> list[Suggestion]:
    rows = cats.rows["gpu_compute"]
    if bottleneck.type != "gpu_bound" or rows.size == 0:
        return []
    uniq, inv = unique_codes(trace.name[rows])
    per_name = np.bincount(inv, weights=trace.dur[rows])
    top = int(np.argmax(per_name))
    share = 100.0 * per_name[top] / per_name.sum()
    name = trace.names[int(uniq[top])]
    return [
        _make(
            "Optimise the hottest kernels first (lower precision / tensor cores, fused or "
            "better-tuned implementations, torch.compile max-autotune)",
            f"The top kernel alone is {share:.1f}% of the compute kernels' summed time",
            pct["gpu_compute"] * share / 100.0 * 0.3,
            [f"GPU compute {pct['gpu_compute']:.1f}% of the timeline", f"Top kernel: {name[:120]}"],
        )
    ]


def _communication(pct: dict[str, float]) -> list[Suggestion]:
    if pct["gpu_communication"] < 10:
        return []
    return [
        _make(
            "Overlap collectives with computation (gradient bucketing, async collectives, "
            "FSDP/DDP overlap settings)",
            "Communication kernels run while no compute kernel does",
            0.5 * pct["gpu_communication"],
            [f"Exposed communication {pct['gpu_communication']:.1f}% of the timeline"],
        )
    ]


def _host_only(summary: Summary, pct: dict[str, float]) -> list[Suggestion]:
    if summary.has_gpu:
        return []
    host = pct["cpu_compute"] + pct["cpu_runtime"] + pct["cpu_sync"]
    gaps = pct["idle"]
    out = [
        _make(
            "Profile the hottest CPU operators (see the top ops) and reduce their work: "
            "larger batches, fewer small ops (torch.compile), or run on an accelerator",
            "The run is CPU-only; host operators are the whole cost",
            0.3 * host,
            [f"CPU operators busy {host:.1f}% of the timeline"],
        )
    ]
    if gaps >= 10:
        out.append(
            _make(
                "Reduce Python/framework overhead between operators (torch.compile, "
                "torch.inference_mode, fewer tiny ops)",
                "Gaps between operators are host time outside any profiled op",
                0.5 * gaps,
                [f"No operator running for {gaps:.1f}% of the timeline"],
            )
        )
    return out
