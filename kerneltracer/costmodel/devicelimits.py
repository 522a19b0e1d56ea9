"""What a device table's numbers may be: the dtype keys, and the plausible range of each
figure. Shared by the table (:mod:`kerneltracer.costmodel.devices`) and the validation of
its files (:mod:`kerneltracer.costmodel.devicespec`)."""

from __future__ import annotations

DTYPE_KEYS = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "fp4", "int8")
TERA = 1e12

# Plausible ranges, wide enough for a laptop CPU and a whole rack taken as one device:
# a value outside them is a typo or a unit mix-up (1e-310 TB/s made every time overflow,
# .inf made every op compute-bound), never a device.
BANDWIDTH_RANGE_TBS = (1e-3, 1e4)
RATE_RANGE_TFLOPS = (1e-3, 1e6)
# A link from a slow Ethernet NIC (1 GB/s) to a whole NVLink switch domain; latencies from a
# fraction of a microsecond to a congested WAN. Outside them: a unit mix-up (Gb/s for GB/s).
LINK_BANDWIDTH_RANGE_GBS = (0.1, 1e5)
LINK_LATENCY_RANGE_US = (0.0, 1e4)
