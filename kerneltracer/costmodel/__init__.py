"""The op cost model: FLOPs and bytes per call from shapes and dtypes, a device table, the
roofline, and sums per op / module / model. Framework-free: it reads the JSON signature
form torch_dispatch writes (see :mod:`kerneltracer.core.signature`), never torch.

- ``estimate(op, inputs, kwargs, outputs)`` -> :class:`OpCost` or None (unknown);
- ``load_devices(extra)`` -> :class:`DeviceTable` (``devices.yaml`` + a user YAML);
- ``roofline(cost, device)`` / ``achieved(cost, device, time_s)``;
- ``breakdown(signatures, device)`` -> :class:`CostBreakdown`.

Costs are estimated from shapes: never a measured time.
"""

from kerneltracer.costmodel.aggregate import (
    UNRECORDED,
    CostBreakdown,
    CostedSignature,
    PerCall,
    Totals,
    UnknownOp,
    breakdown,
    module_group,
)
from kerneltracer.costmodel.call import CATEGORIES, OpCost
from kerneltracer.costmodel.devicelimits import DTYPE_KEYS
from kerneltracer.costmodel.devices import DEFAULT_DEVICE, Device, DeviceTable, load_devices
from kerneltracer.costmodel.estimate import INT64_MAX, estimate, estimate_gemm_like, is_known
from kerneltracer.costmodel.roofline import Achieved, RooflinePoint, achieved, roofline

# The face (contract `faces`): these names, and the submodules ``comm`` (collectives' costs),
# ``layers`` (per layer and rank: the ranks page, the Chakra export) and ``profiler_args``
# (the profiler's recorded shapes as signatures, for the timeline's op table).
__all__ = [
    "CATEGORIES",
    "DEFAULT_DEVICE",
    "DTYPE_KEYS",
    "INT64_MAX",
    "UNRECORDED",
    "Achieved",
    "CostBreakdown",
    "CostedSignature",
    "Device",
    "DeviceTable",
    "OpCost",
    "PerCall",
    "RooflinePoint",
    "Totals",
    "UnknownOp",
    "achieved",
    "breakdown",
    "comm",
    "estimate",
    "estimate_gemm_like",
    "is_known",
    "layers",
    "load_devices",
    "module_group",
    "profiler_args",
    "roofline",
]
