"""Row indices of each bottleneck category (GPU compute, communication, copies, host API
and host work), computed once per trace and shared by the bottleneck analysis and its
suggestions."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kerneltracer.analysis.timeline.load.loader import PH_COMPLETE, ChromeTrace
from kerneltracer.analysis.timeline.model.categories import (
    CPU_BUSY,
    CUDA_API,
    GPU_ACTIVITY,
    KernelType,
    kernel_type,
    memcpy_direction,
)


@dataclass
class CategoryRows:
    """Row indices of each breakdown category, computed once per trace."""

    rows: dict[str, np.ndarray]
    window: tuple[float, float]
    has_gpu: bool


def categorize(trace: ChromeTrace) -> CategoryRows:
    complete = trace.ph == PH_COMPLETE
    names = trace.names
    kinds = {
        "kernel": complete & trace.category_mask({"kernel"}),
        "memcpy": complete & trace.category_mask({"gpu_memcpy"}),
        "memset": complete & trace.category_mask({"gpu_memset"}),
    }
    comm_ids = [i for i, n in enumerate(names) if kernel_type(n) == KernelType.COMMUNICATION]
    is_comm = trace.name_mask(comm_ids)
    direction = {i: memcpy_direction(n) for i, n in enumerate(names)}
    h2d_ids = [i for i, d in direction.items() if d == "HtoD"]
    d2h_ids = [i for i, d in direction.items() if d == "DtoH"]
    is_h2d = kinds["memcpy"] & trace.name_mask(h2d_ids)
    is_d2h = kinds["memcpy"] & trace.name_mask(d2h_ids)
    cuda_api = complete & trace.category_mask(CUDA_API)
    # Host blocked on the GPU: not launch overhead, so kept apart from the other API calls.
    is_sync = trace.name_mask(i for i, n in enumerate(names) if "Synchronize" in n)
    rows = {
        "gpu_compute": np.flatnonzero(kinds["kernel"] & ~is_comm),
        "gpu_communication": np.flatnonzero(kinds["kernel"] & is_comm),
        "h2d_copy": np.flatnonzero(is_h2d),
        "d2h_copy": np.flatnonzero(is_d2h),
        "gpu_memory_other": np.flatnonzero((kinds["memcpy"] & ~is_h2d & ~is_d2h) | kinds["memset"]),
        "cpu_sync": np.flatnonzero(cuda_api & is_sync),
        "cpu_runtime": np.flatnonzero(cuda_api & ~is_sync),
        "cpu_compute": np.flatnonzero(complete & trace.category_mask(CPU_BUSY - CUDA_API)),
    }
    timed = complete & ~trace.category_mask({"trace"})
    if timed.any():
        window = (float(trace.ts[timed].min()), float(trace.end[timed].max()))
    else:
        window = (0.0, 0.0)
    has_gpu = bool((complete & trace.category_mask(GPU_ACTIVITY)).any())
    return CategoryRows(rows, window, has_gpu)
