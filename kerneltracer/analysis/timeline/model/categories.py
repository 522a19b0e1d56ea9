"""Event categories: normalising Kineto's spellings and classifying GPU work.

Kineto renamed its categories over time (``Kernel`` → ``kernel``, ``Runtime`` →
``cuda_runtime``, ...); everything downstream works on the normalised names.
Kernel types follow HTA's definitions so that our kernel and temporal breakdowns are
comparable with its numbers.
"""

from __future__ import annotations

import re
from enum import StrEnum

_LEGACY_CATEGORIES = {
    "kernel": "kernel",
    "memcpy": "gpu_memcpy",
    "memset": "gpu_memset",
    "runtime": "cuda_runtime",
    "driver": "cuda_driver",
    "operator": "cpu_op",
    "python": "python_function",
    "user": "user_annotation",
    "user_annotation": "user_annotation",
    "gpu_user_annotation": "gpu_user_annotation",
    "cpu_instant_event": "cpu_instant_event",
}

GPU_ACTIVITY = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})
# CPU-side work that keeps a host thread busy (annotations only label time, they do not use it).
CPU_BUSY = frozenset({"cpu_op", "python_function", "cuda_runtime", "cuda_driver"})
CUDA_API = frozenset({"cuda_runtime", "cuda_driver"})


def normalize_category(cat: str) -> str:
    """Lower-case legacy Kineto categories onto today's names; unknown ones pass through."""
    low = cat.lower()
    return _LEGACY_CATEGORIES.get(low, low)


class KernelType(StrEnum):
    COMPUTATION = "COMPUTATION"
    COMMUNICATION = "COMMUNICATION"
    MEMORY = "MEMORY"
    OTHER = "OTHER"


# Same semantics as HTA 0.5.0 and traceinsight 0.6.1 (hta.utils.utils.get_kernel_type): NCCL
# kernels communicate, Memcpy/Memset/dma move memory, and anything that mentions Memcpy or Sync
# elsewhere in its name is neither compute nor memory ("OTHER", which HTA counts as non-compute).
_COMM_RE = re.compile(r"nccl.*Kernel")
_MEMORY_RE = re.compile(r"Memcpy|Memset|dma")
_NOT_COMPUTE_RE = re.compile(r"nccl.*Kernel|.*Memcpy|Memset|.*Sync")


def kernel_type(name: str) -> KernelType:
    if _COMM_RE.match(name):
        return KernelType.COMMUNICATION
    if _MEMORY_RE.match(name):
        return KernelType.MEMORY
    if _NOT_COMPUTE_RE.match(name):
        return KernelType.OTHER
    return KernelType.COMPUTATION


def memcpy_direction(name: str) -> str:
    """``HtoD``/``DtoH``/``DtoD``/``PtoP``/... from a Kineto memcpy name, ``""`` if unknown."""
    m = re.match(r"Memcpy\s+(\w+)", name)
    return m.group(1) if m else ""


def memcpy_host_kind(name: str) -> str | None:
    """``pinned``/``pageable`` from names like ``Memcpy HtoD (Pageable -> Device)``."""
    low = name.lower()
    if "pageable" in low:
        return "pageable"
    if "pinned" in low:
        return "pinned"
    return None
