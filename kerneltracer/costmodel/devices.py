"""The device table: peak FLOP/s per dtype and memory bandwidth of each accelerator.

The built-in table is ``devices.yaml`` (package data, datasheet figures with their source; the
code reads its data from ``devices.json``, which ``scripts/gen_devices_json.py`` writes);
:func:`load_devices` merges a user YAML of the same schema over it: a new name adds a
device (every required field), a known name overrides only the fields it gives.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from kerneltracer.costmodel.devicelimits import (
    BANDWIDTH_RANGE_TBS,
    DTYPE_KEYS,
    LINK_BANDWIDTH_RANGE_GBS,
    LINK_LATENCY_RANGE_US,
    RATE_RANGE_TFLOPS,
    TERA,
)
from kerneltracer.errors import UsageError, choices

DEFAULT_DEVICE = "H100"
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
    table = _table(_built_in_specs()) if extra is None else None
    if table is not None:
        return table
    # Validating a YAML (pydantic: ~0.1 s to import and build the models) only here: for a
    # user's file, or a built-in one not as shipped.
    from kerneltracer.costmodel.devicespec import read_specs

    table = _table(read_specs(extra))
    if table is None:  # the models' output is always one _table takes
        raise RuntimeError("validated device specs did not make a device table")
    return table


def _built_in_specs() -> dict[str, Any] | None:
    """The built-in table's devices as parsed, None when they cannot be read or parsed (the
    models' reader then says why). Read from ``devices.json``, the data of ``devices.yaml``
    as ``scripts/gen_devices_json.py`` writes it: PyYAML's import and parse were ~12 ms of
    every run that estimates costs."""
    import orjson

    try:
        raw = orjson.loads(
            resources.files("kerneltracer.costmodel").joinpath("devices.json").read_bytes()
        )
    except (OSError, orjson.JSONDecodeError):
        return None
    if type(raw) is not dict or set(raw) != {"devices"} or type(raw["devices"]) is not dict:
        return None
    specs: dict[str, Any] = raw["devices"]
    return specs


def _table(specs: dict[str, Any] | None) -> DeviceTable | None:
    """The table of ``specs`` (name -> entry as a devices YAML gives it), when every field
    of it is one that :mod:`kerneltracer.costmodel.devicespec`'s models take as it stands:
    the built-in file as shipped needs no pydantic, and the models' own output (their
    validated specs, dumped) is always taken. Else None: the models say what is wrong."""
    if specs is None:
        return None
    devices: dict[str, Device] = {}
    aliases: dict[str, str] = {}
    for name, spec in specs.items():
        device = _device(name, spec)
        if device is None:
            return None
        devices[name] = device
    for name, spec in specs.items():
        for alias in [name, *spec.get("aliases", [])]:
            aliases[alias.lower()] = name
    return DeviceTable(devices, aliases)


_SPEC_FIELDS = {"name", "aliases", "memory_bandwidth_tbs", "peak_tflops", "vector_tflops"}
_LINK_FIELDS = {"link", "bandwidth_gbs", "latency_us"}


def _number(value: Any, valid: tuple[float, float]) -> float | None:
    """``value`` as the models' range check takes it (a finite int or float in range)."""
    if type(value) not in (int, float) or not math.isfinite(value):
        return None
    return float(value) if valid[0] <= value <= valid[1] else None


def _rates(value: Any) -> dict[str, float] | None:
    if type(value) is not dict or not set(value) <= set(DTYPE_KEYS):
        return None
    rates = {k: _number(v, RATE_RANGE_TFLOPS) for k, v in value.items()}
    return (
        None if None in rates.values() else {k: v * TERA for k, v in rates.items() if v is not None}
    )


def _device(name: Any, spec: Any) -> Device | None:
    """A built-in entry as DeviceSpec validates it; None for anything it would not take as
    it stands."""
    if type(name) is not str or type(spec) is not dict:
        return None
    if (
        not {"name", "memory_bandwidth_tbs", "peak_tflops"}
        <= set(spec)
        <= _SPEC_FIELDS | {"interconnect"}
    ):
        return None
    aliases = spec.get("aliases", [])
    if type(spec["name"]) is not str or type(aliases) is not list:
        return None
    if not all(type(a) is str for a in aliases):
        return None
    bandwidth = _number(spec["memory_bandwidth_tbs"], BANDWIDTH_RANGE_TBS)
    peak, vector = _rates(spec["peak_tflops"]), _rates(spec.get("vector_tflops", {}))
    if bandwidth is None or peak is None or vector is None or "fp32" not in peak:
        return None
    interconnect: Interconnect | None = None
    if spec.get("interconnect") is not None:
        interconnect = _interconnect(spec["interconnect"])
        if interconnect is None:
            return None
    return Device(name, spec["name"], bandwidth * TERA, peak, vector, interconnect)


def _link(spec: Any) -> Link | None:
    if type(spec) is not dict or set(spec) != _LINK_FIELDS or type(spec["link"]) is not str:
        return None
    bandwidth = _number(spec["bandwidth_gbs"], LINK_BANDWIDTH_RANGE_GBS)
    latency = _number(spec["latency_us"], LINK_LATENCY_RANGE_US)
    if bandwidth is None or latency is None:
        return None
    return Link(spec["link"], bandwidth * 1e9, latency * 1e-6)


def _interconnect(spec: Any) -> Interconnect | None:
    if type(spec) is not dict or not {"gpus_per_node", "intra_node"} <= set(spec):
        return None
    if not set(spec) <= {"gpus_per_node", "intra_node", "inter_node"}:
        return None
    gpus = spec["gpus_per_node"]
    if type(gpus) is not int or not 1 <= gpus <= 4096:
        return None
    intra = _link(spec["intra_node"])
    inter = None if spec.get("inter_node") is None else _link(spec["inter_node"])
    if intra is None or (inter is None and spec.get("inter_node") is not None):
        return None
    return Interconnect(gpus, intra, inter)
