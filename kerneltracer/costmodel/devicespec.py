"""The device table's files: ``devices.yaml`` and a user's YAML, read and validated.

Apart from :mod:`kerneltracer.costmodel.devices` (the table as the cost model uses it) so
that pydantic loads only when a user's table (or a built-in one not as shipped) is read
(:func:`~kerneltracer.costmodel.devices.load_devices`), not with every command that
imports the cost model.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictStr, ValidationError
from pydantic_core import PydanticCustomError

from kerneltracer.costmodel.devicelimits import (
    BANDWIDTH_RANGE_TBS,
    DTYPE_KEYS,
    LINK_BANDWIDTH_RANGE_GBS,
    LINK_LATENCY_RANGE_US,
    RATE_RANGE_TFLOPS,
)
from kerneltracer.errors import ConfigError, InputFileError
from kerneltracer.inputguard import SMALL_FILE, read_input_text

# libyaml's parser when PyYAML has it: the built-in table is read by every command that
# estimates times (timeline on a 4 KB trace spent a fifth of its CPU in the pure-Python one).
_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_DTypeKey = Literal["fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "fp4", "int8"]


def _in_range(low: float, high: float, unit: str) -> Callable[[Any], float]:
    """A strict number check: a finite int or float within ``[low, high]``; YAML's
    ``true`` or a quoted ``"3.0"`` is no number, whatever Python would coerce it to."""
    valid = f"a number from {low:g} to {high:g} {unit}"

    def check(value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            shown = str(value).lower() if isinstance(value, bool) else repr(value)[:40]
            hint = ""
            if isinstance(value, str) and _is_float(value):
                hint = "; write numbers unquoted, exponents as 1.0e+5"
            raise PydanticCustomError(
                "device_number_type",
                "{value} is not a number (valid: {valid}{hint})",
                {"value": shown, "valid": valid, "hint": hint},
            )
        if not math.isfinite(value) or not low <= value <= high:
            raise PydanticCustomError(
                "device_number_range",
                "{value} is out of range (valid: {valid})",
                {"value": repr(value)[:40], "valid": valid},
            )
        return float(value)

    return check


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


Bandwidth = Annotated[float, BeforeValidator(_in_range(*BANDWIDTH_RANGE_TBS, "TB/s"))]
_Rate = Annotated[float, BeforeValidator(_in_range(*RATE_RANGE_TFLOPS, "TFLOP/s"))]
_LinkBandwidth = Annotated[float, BeforeValidator(_in_range(*LINK_BANDWIDTH_RANGE_GBS, "GB/s"))]
_LinkLatency = Annotated[float, BeforeValidator(_in_range(*LINK_LATENCY_RANGE_US, "us"))]


class LinkSpec(BaseModel):
    """One class of link a device's collectives cross (NVLink, xGMI, InfiniBand, RoCE)."""

    model_config = ConfigDict(extra="forbid")

    link: StrictStr = Field(description="The link's name, e.g. 'NVLink 4', 'InfiniBand NDR'.")
    bandwidth_gbs: _LinkBandwidth = Field(
        description="Bandwidth per GPU per direction, GB/s (10^9 bytes/s)."
    )
    latency_us: _LinkLatency = Field(description="Latency of one algorithm step, microseconds.")


class InterconnectSpec(BaseModel):
    """How a device's GPUs talk: within a node, and between nodes."""

    model_config = ConfigDict(extra="forbid")

    gpus_per_node: int = Field(ge=1, le=4096, strict=True, description="GPUs sharing intra_node.")
    intra_node: LinkSpec
    inter_node: LinkSpec | None = Field(None, description="Between nodes; none: one node only.")


class DeviceSpec(BaseModel):
    """One device entry of a devices YAML."""

    model_config = ConfigDict(extra="forbid")

    name: StrictStr = Field(description="Full product name.")
    aliases: list[StrictStr] = Field(default_factory=list)
    memory_bandwidth_tbs: Bandwidth = Field(description="Memory bandwidth, TB/s.")
    peak_tflops: dict[_DTypeKey, _Rate] = Field(
        description="Dense peak of matrix ops per dtype, TFLOP/s; fp32 is required."
    )
    vector_tflops: dict[_DTypeKey, _Rate] = Field(
        default_factory=dict, description="Peak of non-matrix ops per dtype, TFLOP/s."
    )
    interconnect: InterconnectSpec | None = Field(
        None, description="Links between GPUs, for the cost of collectives."
    )


class DevicesFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    devices: dict[str, DeviceSpec]


def _read(path: Path | None) -> dict[str, Any]:
    where = path if path is not None else Path("devices.yaml")
    try:
        if path is None:
            text = resources.files("kerneltracer.costmodel").joinpath("devices.yaml").read_text()
        else:
            # The input guard: a FIFO, /dev/zero or a binary file is refused, not read.
            text = read_input_text(Path(path), SMALL_FILE, what="devices file")
        raw = yaml.load(text, Loader=_LOADER)
    except InputFileError as exc:
        raise ConfigError(str(exc)) from None
    except OSError as exc:
        raise ConfigError(f"cannot read devices file ({exc.strerror or exc})", where) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise ConfigError(f"not valid YAML ({getattr(exc, 'problem', exc)})", where, line) from None
    if not isinstance(raw, dict) or not isinstance(raw.get("devices"), dict):
        raise ConfigError("expected a mapping with a 'devices:' mapping of name -> spec", where)
    extra = sorted(set(raw) - {"devices"})
    if extra:
        raise ConfigError(f"unknown top-level key(s) {', '.join(extra)} (valid: devices)", where)
    return raw["devices"]


def _merge(base: dict[str, Any], update: Any) -> Any:
    if not isinstance(update, dict):
        return update
    out = dict(base)
    for k, v in update.items():
        out[k] = _merge(base[k], v) if isinstance(base.get(k), dict) else v
    return out


def _validate(raw: dict[str, Any], path: Path | None) -> dict[str, DeviceSpec]:
    try:
        return DevicesFile.model_validate({"devices": raw}).devices
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = [str(p) for p in err["loc"] if p != "[key]"]
        field = ".".join(loc)
        msg = err["msg"]
        if err["loc"][-1] == "[key]":
            msg = f"unknown dtype {loc[-1]!r} (valid dtypes: {', '.join(DTYPE_KEYS)})"
        elif err["type"] == "extra_forbidden":
            spec: type[BaseModel] = DeviceSpec
            if "intra_node" in loc or "inter_node" in loc:
                spec = LinkSpec
            elif "interconnect" in loc:
                spec = InterconnectSpec
            msg = f"unknown field (valid: {', '.join(spec.model_fields)})"
        more = f" (+{exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        where = path if path is not None else Path("devices.yaml")
        raise ConfigError(f"{field}: {msg}{more}", where) from None


def read_specs(extra: Path | None = None) -> dict[str, dict[str, Any]]:
    """The built-in device specs, with the devices of the YAML ``extra`` merged over them,
    validated (ConfigError: one line, naming the file and the field), as plain values."""
    raw = _read(None)
    if extra is not None:
        user = _read(extra)
        known = {k.lower(): k for k in raw}
        for name, spec in user.items():
            key = known.get(str(name).lower())
            raw[key or str(name)] = _merge(raw[key], spec) if key else spec
    specs = _validate(raw, extra)
    for name, spec in specs.items():
        if "fp32" not in spec.peak_tflops:
            where = extra if extra is not None else Path("devices.yaml")
            raise ConfigError(f"devices.{name}.peak_tflops: fp32 is required", where)
    return {name: spec.model_dump() for name, spec in specs.items()}
