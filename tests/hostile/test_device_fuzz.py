"""Fuzzing the device table loader (``--devices FILE``): any file gives a table whose every
rate is finite, positive and within the documented range, or one ConfigError naming the
file, never another exception (issue 38: 1e-310 TB/s, .inf and ``true`` got through).
"""

from __future__ import annotations

import math
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kerneltracer.costmodel import load_devices
from kerneltracer.costmodel.devicelimits import (
    BANDWIDTH_RANGE_TBS,
    DTYPE_KEYS,
    RATE_RANGE_TFLOPS,
    TERA,
)
from kerneltracer.costmodel.devicespec import DeviceSpec
from kerneltracer.errors import ConfigError

_SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
_VALID = (
    "devices:\n"
    "  mine:\n    name: Mine\n    aliases: [m1]\n    memory_bandwidth_tbs: 2.5\n"
    "    peak_tflops: {fp32: 60, bf16: 900}\n    vector_tflops: {fp32: 30}\n"
    "  H100: {memory_bandwidth_tbs: 3.0}\n"
)
_numbers = st.one_of(
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e-310, 5e-324, 1e308, 0.0, -0.0, "3.0", "1e5", ".inf", ""]),
)
_values = st.one_of(
    _numbers,
    st.none(),
    st.text(max_size=12),
    st.lists(_numbers, max_size=3),
    st.dictionaries(st.sampled_from([*DTYPE_KEYS, "bf17", ""]), _numbers, max_size=4),
)
_specs = st.dictionaries(
    st.sampled_from([*DeviceSpec.model_fields, "bandwidth"]), _values, max_size=6
)
_names = st.one_of(st.sampled_from(["H100", "h100", "A100", "new", "x"]), st.text(max_size=8))


def _check(text: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "devices.yaml"
        path.write_bytes(text)
        try:
            table = load_devices(path)
        except ConfigError as exc:
            assert str(exc).startswith(str(path)), str(exc)
            assert "\n" not in str(exc).strip()
            return
    low, high = BANDWIDTH_RANGE_TBS
    rlow, rhigh = RATE_RANGE_TFLOPS
    for device in table.devices.values():
        assert math.isfinite(device.bandwidth) and low * TERA <= device.bandwidth <= high * TERA
        for rate in (*device.peak.values(), *device.vector.values()):
            assert math.isfinite(rate) and rlow * TERA <= rate <= rhigh * TERA


@_SETTINGS
@given(st.binary(max_size=300))
def test_random_bytes(data: bytes) -> None:
    _check(data)


@_SETTINGS
@given(st.dictionaries(_names, _specs, max_size=3))
def test_random_documents(devices: dict[str, Any]) -> None:
    _check(
        yaml.safe_dump({"devices": devices}, allow_unicode=True).encode("utf-8", "surrogatepass")
    )


@_SETTINGS
@given(st.lists(st.tuples(st.integers(0, len(_VALID)), st.integers(0, 8), st.text(max_size=6))))
def test_random_edits_of_a_valid_file(edits: list[tuple[int, int, str]]) -> None:
    text = _VALID
    for at, cut, insert in edits:
        text = text[:at] + insert + text[at + cut :]
    _check(text.encode("utf-8", "surrogatepass"))
