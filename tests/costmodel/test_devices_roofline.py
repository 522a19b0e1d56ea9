"""The device table (built-in + user YAML), the roofline and achieved rates, dtype sizes."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kerneltracer.costmodel import OpCost, achieved, load_devices, roofline
from kerneltracer.costmodel.values import DTYPE_BYTES
from kerneltracer.errors import ConfigError, UsageError


def test_dtype_sizes_match_every_torch_dtype() -> None:
    dtypes = {
        str(v).removeprefix("torch."): v.itemsize
        for v in vars(torch).values()
        if isinstance(v, torch.dtype)
    }
    assert len(dtypes) > 30
    assert {name: DTYPE_BYTES.get(name) for name in dtypes} == dtypes


def test_builtin_table_has_the_datasheet_devices() -> None:
    table = load_devices()
    assert table.names() == ["A100", "B200", "H100", "H200", "MI250", "MI250X", "MI300X"]
    h100 = table.get("h100-sxm")  # names and aliases, any case
    assert h100.key == "H100"
    assert h100.bandwidth == pytest.approx(3.35e12)
    assert h100.peak["bf16"] == pytest.approx(989.5e12)
    assert table.get("A100").rate("float8_e4m3fn", matrix=True)[0] == "fp16"  # no FP8 there
    assert table.get("MI300X").rate("bfloat16", matrix=False) == ("fp32", 163.4e12)


def test_unknown_device_lists_the_valid_ones() -> None:
    with pytest.raises(UsageError, match=r"unknown device 'H800' \(valid: A100, B200, H100"):
        load_devices().get("H800")


def test_user_yaml_adds_devices_and_overrides_fields(tmp_path: Path) -> None:
    extra = tmp_path / "mine.yaml"
    extra.write_text(
        "devices:\n"
        "  my-npu:\n"
        "    name: My NPU\n"
        "    memory_bandwidth_tbs: 1.0\n"
        "    peak_tflops: {fp32: 10, bf16: 100}\n"
        "  h100:\n"
        "    memory_bandwidth_tbs: 3.0\n"
    )
    table = load_devices(extra)
    assert table.get("my-npu").peak == {"fp32": 10e12, "bf16": 100e12}
    h100 = table.get("H100")
    assert h100.bandwidth == pytest.approx(3.0e12)
    assert h100.peak["bf16"] == pytest.approx(989.5e12)  # untouched fields kept


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "devices:\n  x: {name: X, memory_bandwidth_tbs: 1, peak_tflops: {fp32: 1, bf17: 2}}\n",
            r"mine.yaml: devices.x.peak_tflops.bf17: unknown dtype 'bf17' \(valid dtypes: fp64",
        ),
        (
            "devices:\n  H100: {bandwidth: 1}\n",
            r"mine.yaml: devices.H100.bandwidth: unknown field \(valid: name, aliases, memory_band",
        ),
        (
            "devices:\n  x: {name: X, peak_tflops: {fp32: 1}}\n",
            r"mine.yaml: devices.x.memory_bandwidth_tbs: Field required",
        ),
        (
            "devices:\n  x: {name: X, memory_bandwidth_tbs: 1, peak_tflops: {bf16: 1}}\n",
            r"mine.yaml: devices.x.peak_tflops: fp32 is required",
        ),
        (
            "devices:\n  H100: {memory_bandwidth_tbs: -1}\n",
            r"mine.yaml: devices.H100.memory_bandwidth_tbs: -1 is out of range \(valid: a number "
            r"from 0.001 to 10000 TB/s\)",
        ),
        ("gpus: {}\n", r"mine.yaml: expected a mapping with a 'devices:'"),
        ("devices: [\n", r"mine.yaml:2: not valid YAML"),
    ],
)
def test_bad_user_yaml_names_file_and_field(tmp_path: Path, text: str, message: str) -> None:
    extra = tmp_path / "mine.yaml"
    extra.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_devices(extra)


BANDWIDTH_RANGE = r"\(valid: a number from 0.001 to 10000 TB/s"
RATE_RANGE = r"\(valid: a number from 0.001 to 1e\+06 TFLOP/s"


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        # Issue 38: a subnormal bandwidth overflowed every time, .inf made every op
        # compute-bound, and YAML's true was taken for 1 TB/s.
        ("memory_bandwidth_tbs", "1.0e-310", rf"1e-310 is out of range {BANDWIDTH_RANGE}"),
        ("memory_bandwidth_tbs", ".inf", rf"inf is out of range {BANDWIDTH_RANGE}"),
        ("memory_bandwidth_tbs", "-.inf", rf"-inf is out of range {BANDWIDTH_RANGE}"),
        ("memory_bandwidth_tbs", ".nan", rf"nan is out of range {BANDWIDTH_RANGE}"),
        ("memory_bandwidth_tbs", "0", rf"0 is out of range {BANDWIDTH_RANGE}"),
        ("memory_bandwidth_tbs", "1.0e+30", rf"1e\+30 is out of range {BANDWIDTH_RANGE}"),
        ("memory_bandwidth_tbs", "true", rf"true is not a number {BANDWIDTH_RANGE}"),
        ("memory_bandwidth_tbs", "'3.35'", rf"'3.35' is not a number {BANDWIDTH_RANGE}"),
        ("memory_bandwidth_tbs", "1e5", r"'1e5' is not a number .*exponents as 1.0e\+5\)"),
        ("memory_bandwidth_tbs", "[3]", rf"\[3\] is not a number {BANDWIDTH_RANGE}"),
        ("peak_tflops", "{fp32: .inf}", rf"inf is out of range {RATE_RANGE}"),
        ("peak_tflops", "{fp32: false}", rf"false is not a number {RATE_RANGE}"),
        ("vector_tflops", "{fp32: 1.0e-9}", r"1e-09 is out of range"),
        ("name", "12", r"Input should be a valid string"),
        ("aliases", "[true]", r"Input should be a valid string"),
    ],
)
def test_device_numbers_are_finite_plausible_and_strictly_typed(
    tmp_path: Path, field: str, value: str, message: str
) -> None:
    extra = tmp_path / "mine.yaml"
    extra.write_text(f"devices:\n  H100: {{{field}: {value}}}\n")
    with pytest.raises(ConfigError, match=rf"mine.yaml: devices.H100.{field}\S*: {message}"):
        load_devices(extra)


def test_device_numbers_at_the_range_ends_are_kept(tmp_path: Path) -> None:
    extra = tmp_path / "mine.yaml"
    extra.write_text(
        "devices:\n  edge: {name: Edge, memory_bandwidth_tbs: 0.001,"
        " peak_tflops: {fp32: 1000000, bf16: 2}}\n"
    )
    edge = load_devices(extra).get("edge")
    assert edge.bandwidth == pytest.approx(1e9)
    assert edge.peak["fp32"] == pytest.approx(1e18)


def test_roofline_bound_and_time_lower_bound() -> None:
    h100 = load_devices().get("H100")
    m = k = n = 8192  # a big bf16 GEMM: far above the ridge
    gemm = OpCost(2 * m * n * k, 2 * (m * k + k * n), 2 * m * n, "matmul", "bfloat16")
    point = roofline(gemm, h100)
    assert point.bound == "compute"
    assert point.rate == "bf16 matrix"
    assert point.time_s == pytest.approx(2 * m * n * k / 989.5e12)
    assert point.intensity == pytest.approx(gemm.flops / gemm.bytes)
    assert point.ridge == pytest.approx(989.5e12 / 3.35e12)
    add = OpCost(1 << 20, 8 << 20, 4 << 20, "elementwise", "float32")
    point = roofline(add, h100)
    assert (point.bound, point.rate) == ("memory", "fp32 vector")
    assert point.time_s == pytest.approx((12 << 20) / 3.35e12)
    fp32_gemm = OpCost(gemm.flops, gemm.bytes_read * 2, gemm.bytes_written * 2, "matmul", "float32")
    assert roofline(fp32_gemm, h100, dtype="tf32").peak_flops == pytest.approx(494.5e12)
    view = roofline(OpCost(0, 0, 0, "view"), h100)
    assert (view.bound, view.time_s, view.intensity) == ("none", 0.0, None)


def test_achieved_rates_and_efficiency() -> None:
    h100 = load_devices().get("H100")
    cost = OpCost(989_500_000_000, 1_000_000, 0, "matmul", "bfloat16")  # 1 ms at peak
    run = achieved(cost, h100, time_s=2e-3)
    assert run.flops_per_s == pytest.approx(989.5e12 / 2)
    assert run.bytes_per_s == pytest.approx(5e8)
    assert run.efficiency == pytest.approx(0.5)
    with pytest.raises(ValueError, match="positive"):
        achieved(cost, h100, time_s=0.0)


@pytest.mark.parametrize("value", ["1.0e-310", ".inf", "true"])
def test_bad_device_file_stops_timeline_before_any_file(
    testdata_dir: Path, tmp_path: Path, value: str
) -> None:
    import os
    import subprocess
    import sys

    from tests.conftest import REPO_ROOT
    from tests.helpers import KT

    (trace,) = (testdata_dir / "hta" / "critical_path" / "alexnet").glob("*.json.gz")
    devices = tmp_path / "mine.yaml"
    devices.write_text(f"devices:\n  H100: {{memory_bandwidth_tbs: {value}}}\n")
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), *sys.path])}
    done = subprocess.run(
        [*KT, "timeline", str(trace), "-o", str(out), "--devices", str(devices)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "memory_bandwidth_tbs" in lines[0], lines
    assert not out.exists()


def test_the_json_table_is_the_yaml_one() -> None:
    """devices.json (what the code reads) holds devices.yaml's data in its order, as
    scripts/gen_devices_json.py writes it."""
    import importlib.util

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("gen", root / "scripts" / "gen_devices_json.py")
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    committed = (root / "kerneltracer" / "costmodel" / "devices.json").read_bytes()
    assert committed == gen.render(), "devices.json is stale: run scripts/gen_devices_json.py"


def test_the_built_in_table_read_without_pydantic_is_the_validated_one() -> None:
    # load_devices() builds devices.yaml's table without pydantic when every field is as the
    # models take it as it stands; the models' own table must be the same, to the last bit.
    from kerneltracer.costmodel.devices import _built_in_specs, _table
    from kerneltracer.costmodel.devicespec import read_specs

    plain = _table(_built_in_specs())
    assert plain is not None
    assert plain == _table(read_specs(None)) == load_devices()
    assert len(plain.devices) >= 7 and "h100-sxm" in plain.aliases


@pytest.mark.parametrize(
    "change",
    [
        {"memory_bandwidth_tbs": "3.35"},
        {"memory_bandwidth_tbs": True},
        {"memory_bandwidth_tbs": 1e9},
        {"peak_tflops": {"fp16": 1.0}},
        {"peak_tflops": {"fp32": 1.0, "fp7": 1.0}},
        {"aliases": ["a", 3]},
        {"colour": "green"},
        {"interconnect": {"gpus_per_node": 8.0, "intra_node": None}},
        {"interconnect": {"gpus_per_node": 8, "intra_node": {"link": "x", "bandwidth_gbs": 1}}},
    ],
)
def test_a_built_in_entry_not_as_shipped_goes_to_the_models(
    change: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    import orjson

    from kerneltracer.costmodel import devices

    entry: dict[str, object] = {
        "name": "X",
        "memory_bandwidth_tbs": 1.0,
        "peak_tflops": {"fp32": 1},
    }
    # devices.json's data, as the built-in table's reader parses it
    monkeypatch.setattr(orjson, "loads", lambda *_a, **_k: {"devices": {"X": entry}})
    table = devices._table(devices._built_in_specs())
    assert table is not None and table.get("x").bandwidth == 1e12  # as it stands: taken
    entry.update(change)
    assert devices._table(devices._built_in_specs()) is None
