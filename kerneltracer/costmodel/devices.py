"""The device table: peak FLOP/s per dtype and memory bandwidth of each accelerator.

The built-in table is ``devices.yaml`` (package data, datasheet figures with their source);
:func:`load_devices` merges a user YAML of the same schema over it: a new name adds a
device (every required field), a known name overrides only the fields it gives.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kerneltracer.errors import UsageError, choices

DEFAULT_DEVICE = "H100"
DTYPE_KEYS = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "fp4", "int8")
TERA = 1e12

# torch dtype name -> the device rate it computes at
_KEY_OF_DTYPE = {
    "float64": "fp64",
    "complex128": "fp64",
    "float32": "fp32",
    "complex64": "fp32",
    "bfloat16": "bf16",
    "float16": "fp16",
    "complex32": "fp16",
    "float4_e2m1fn_x2": "fp4",
    **{f"float8_{v}": "fp8" for v in ("e4m3fn", "e4m3fnuz", "e5m2", "e5m2fnuz", "e8m0fnu")},
    "int8": "int8",
    "uint8": "int8",
    "qint8": "int8",
    "quint8": "int8",
}
# A rate the device lacks (FP8 on an A100) falls back to the next wider one it has.
_WIDER = {
    "fp4": "fp8",
    "fp8": "fp16",
    "bf16": "fp16",
    "fp16": "fp32",
    "tf32": "fp32",
    "int8": "fp16",
    "fp64": "fp32",
}


@dataclass(frozen=True, slots=True)
class Link:
    name: str  # "NVLink 4"
    bandwidth: float  # bytes/s per GPU per direction
    latency: float  # seconds per algorithm step


@dataclass(frozen=True, slots=True)
class Interconnect:
    gpus_per_node: int
    intra_node: Link
    inter_node: Link | None  # None: the device's table entry knows no link between nodes


@dataclass(frozen=True)
class Device:
    """A device's rates in FLOP/s and bytes/s."""

    key: str  # the table's name: "H100"
    name: str
    bandwidth: float  # bytes/s
    peak: dict[str, float]  # dtype key -> FLOP/s of matrix ops
    vector: dict[str, float]  # dtype key -> FLOP/s of other ops
    interconnect: Interconnect | None = None  # None: collectives get no time estimate

    def rate(self, dtype: str | None, matrix: bool) -> tuple[str, float]:
        """(dtype key used, FLOP/s) for ops computing in ``dtype`` (a torch dtype name or a
        dtype key): matrix ops get the matrix rate, others the vector rate."""
        key = dtype if dtype in DTYPE_KEYS else _KEY_OF_DTYPE.get(str(dtype), "fp32")
        table = self.peak if matrix or not self.vector else self.vector
        while key not in table and key in _WIDER:
            key = _WIDER[key]
        if key in table:
            return key, table[key]
        return "fp32", self.peak["fp32"]


@dataclass(frozen=True)
class DeviceTable:
    devices: dict[str, Device]
    aliases: dict[str, str]  # lower-case name or alias -> key

    def names(self) -> list[str]:
        return sorted(self.devices)

    def get(self, name: str) -> Device:
        key = self.aliases.get(name.lower())
        if key is None:
            raise UsageError(f"unknown device {name!r} (valid: {choices(self.devices)})")
        return self.devices[key]


def load_devices(extra: Path | None = None) -> DeviceTable:
    """The built-in device table, with the devices of the YAML ``extra`` merged over it."""
    # Reading and validating the YAML (PyYAML, pydantic: ~0.1 s to import) only here: an
    # estimate without a device, or none at all, needs neither.
    from kerneltracer.costmodel.devicespec import read_table

    return read_table(extra)
