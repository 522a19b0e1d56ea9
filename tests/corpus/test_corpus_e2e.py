"""The tiny models traced by real torch_dispatch workers, then the real `kerneltracer
corpus`, `replay` and `readiness` CLIs on the run: every signature replays with the
recorded output shapes, the operator_inp logs round-trip, readiness names exact blockers."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml

from kerneltracer.core.signature import strip_ranges
from kerneltracer.corpus.backendbench import format_args
from kerneltracer.corpus.operator_inp import format_entry, format_log, parse_entry, parse_log
from kerneltracer.corpus.schema import arrow_schema
from tests.conftest import clean_env
from tests.corpus.bb_reader import (
    benchmark_dict,
    deserialize_args,
    expected,
    nan_safe,
    registry,
    resolve,
)
from tests.helpers import kt, write_config

pytestmark = pytest.mark.e2e

MODELS = ["tiny-bert", "tiny-gpt2", "tiny-llama", "tiny-llama [train]"]
INDEX_OPS = {  # ops whose integer inputs must stay in bounds
    "aten.embedding.default",
    "aten.embedding_dense_backward.default",
    "aten.nll_loss_forward.default",
    "aten.nll_loss_backward.default",
}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory, tiny_models: dict[str, Path]) -> Path:
    root = tmp_path_factory.mktemp("corpus-run")
    models: list[dict[str, Any]] = [{"path": str(p)} for p in tiny_models.values()]
    models.append({"path": str(tiny_models["tiny-llama"]), "mode": "train"})
    cfg = write_config(
        root / "config.yaml", models, defaults={"tracers": ["torch_dispatch"], "seq_len": 16}
    )
    proc = kt("run", str(cfg), "--jobs", "2", env=clean_env(root))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return root / "run"


@pytest.fixture(scope="module")
def corpus_dir(run_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("corpus")
    proc = kt("corpus", str(run_dir), "-o", str(out), "--strict")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def _rows(run_dir: Path) -> dict[str, list[dict[str, Any]]]:
    """The raw dispatch_ops.jsonl rows of every job, by model label."""
    out = {}
    for model, job in [
        ("tiny-bert", "tiny-bert/torch_dispatch"),
        ("tiny-gpt2", "tiny-gpt2/torch_dispatch"),
        ("tiny-llama", "tiny-llama/torch_dispatch"),
        ("tiny-llama [train]", "tiny-llama/torch_dispatch.train"),
    ]:
        text = (run_dir / "jobs" / job / "dispatch_ops.jsonl").read_text()
        out[model] = [json.loads(line) for line in text.splitlines()]
    return out


def test_recorder_keeps_index_ranges_and_module_paths(run_dir: Path) -> None:
    rows = _rows(run_dir)["tiny-llama [train]"]
    emb = next(r for r in rows if r["op"] == "aten.embedding.default")
    ids = emb["inputs"][1]
    assert ids["dtype"] == "int64" and 0 <= ids["min"] <= ids["max"] < 512
    assert list(emb["modules"]) == ["model.embed_tokens"]
    nll = next(r for r in rows if r["op"] == "aten.nll_loss_forward.default")
    assert nll["inputs"][1]["max"] < 512 and nll["inputs"][4] == -100  # target, ignore_index
    assert {r["phase"] for r in rows} == {"forward", "backward"}
    mm = [r for r in rows if r["op"] == "aten.mm.default" and r["phase"] == "forward"]
    assert any(p.startswith("model.layers.0.") for r in mm for p in r["modules"])


def test_corpus_has_each_unique_signature_once(run_dir: Path, corpus_dir: Path) -> None:
    unique: dict[str, dict[str, int]] = {}
    for model, rows in _rows(run_dir).items():
        for r in rows:
            key = json.dumps([r["op"], strip_ranges(r["inputs"]), strip_ranges(r["kwargs"])])
            unique.setdefault(key, {}).setdefault(model, 0)
            unique[key][model] += r["count"]
    table = pq.read_table(corpus_dir / "corpus.parquet")
    assert table.schema.equals(arrow_schema())  # Parquet renames list items: no field metadata
    assert table.schema.metadata == arrow_schema().metadata
    got = table.to_pylist()
    assert len(got) == len(unique) > 100
    assert sum(r["calls"] for r in got) == sum(sum(v.values()) for v in unique.values())
    assert sorted({m for r in got for m in r["models"]}) == MODELS
    by_key = {
        json.dumps(
            [
                r["op"],
                strip_ranges(json.loads(r["inputs_json"])),
                strip_ranges(json.loads(r["kwargs_json"])),
            ]
        ): r
        for r in got
    }
    for key, calls in unique.items():
        row = by_key[key]
        assert dict(zip(row["models"], row["model_calls"], strict=True)) == calls
        assert row["forward_calls"] + row["backward_calls"] == row["calls"]


def test_operator_inp_logs_round_trip_byte_identical(corpus_dir: Path) -> None:
    logs = [corpus_dir / "operator_inp.txt", *sorted((corpus_dir / "operator_inp").glob("*.txt"))]
    assert len(logs) == 5
    for path in logs:
        text = path.read_text()
        log = parse_log(text)
        assert not log.malformed, (path, log.first_errors)
        assert format_log(log.blocks) == text
    for line in pq.read_table(corpus_dir / "corpus.parquet").column("operator_inp").to_pylist():
        assert format_entry(parse_entry(line)) == line
    assert "min=" in (corpus_dir / "operator_inp.txt").read_text()


def test_backendbench_file_reads_back_as_the_traced_calls(corpus_dir: Path) -> None:
    corpus = pq.read_table(corpus_dir / "corpus.parquet").to_pylist()
    rows = pq.read_table(corpus_dir / "backendbench.parquet").to_pylist()
    assert len(rows) == len(corpus)  # one device type, no opaque values: nothing merges
    assert sum(r["count"] for r in rows) == sum(r["calls"] for r in corpus)
    assert [r for r in rows if r["why_excluded"]] == []
    suite = benchmark_dict(corpus_dir / "backendbench.parquet")
    assert sum(len(v) for v in suite.values()) == len(rows)
    reg = registry(*suite)
    for sig in corpus:
        inputs, kwargs = json.loads(sig["inputs_json"]), json.loads(sig["kwargs_json"])
        text, _ = format_args(inputs, kwargs, reg)
        assert text in suite[sig["op"]]
        args, kw = deserialize_args(text)  # BackendBench's rules; tensors built on meta
        assert nan_safe([list(args), kw]) == nan_safe([expected(inputs), expected(kwargs)])
    for op in suite:
        resolve(op)


def test_every_signature_replays_with_the_recorded_shapes(corpus_dir: Path) -> None:
    proc = kt("replay", str(corpus_dir), "--repeats", "3")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with (corpus_dir / "replay" / "replay.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == pq.read_metadata(corpus_dir / "corpus.parquet").num_rows
    assert {r["status"] for r in rows} == {"ok"}, [r for r in rows if r["status"] != "ok"]
    assert {r["op"] for r in rows} >= INDEX_OPS
    doc = json.loads((corpus_dir / "replay" / "replay.json").read_text())
    assert sorted(doc["model_shares"]) == MODELS
    for items in doc["model_shares"].values():
        assert sum(i["share"] for i in items) == pytest.approx(1.0)


def test_readiness_blockers_are_exact_and_vanish_when_supported(
    run_dir: Path, tmp_path: Path
) -> None:
    rows = _rows(run_dir)
    all_ops = sorted({r["op"] for rs in rows.values() for r in rs})
    missing = ["aten.embedding.default", "aten.nll_loss_forward.default", "aten.gelu.default"]
    assert set(missing) <= set(all_ops)
    support = tmp_path / "support.yaml"
    support.write_text(yaml.safe_dump({"ops": [op for op in all_ops if op not in missing]}))
    out = tmp_path / "readiness"
    proc = kt("readiness", str(run_dir), "--support", str(support), "-o", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads((out / "readiness.json").read_text())
    expected = {model: sorted({r["op"] for r in rs} & set(missing)) for model, rs in rows.items()}
    assert {m: sorted(b["op"] for b in bs) for m, bs in doc["blockers"].items()} == expected
    assert sorted(o["op"] for o in doc["ranked"]) == sorted(missing)
    assert doc["ranked"][-1]["ready_after"] == len(MODELS)
    # no --replay: ops weighed by the time estimated from shapes, and the file says so
    assert doc["time_weight"] == "estimate" and "H100" in doc["time_note"]
    assert all(o["est_time_us"] > 0 for o in doc["ranked"])
    for o in doc["ranked"]:
        users = sorted(m for m, ops in expected.items() if o["op"] in ops)
        assert o["models_blocked"] == users

    support.write_text(yaml.safe_dump({"ops": all_ops}))
    proc = kt("readiness", str(run_dir), "--support", str(support), "-o", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads((out / "readiness.json").read_text())
    assert doc["ranked"] == [] and doc["ready_models"] == MODELS
    assert all(bs == [] for bs in doc["blockers"].values())


def test_corpus_costs_follow_the_recorded_shapes(corpus_dir: Path) -> None:
    rows = pq.read_table(corpus_dir / "corpus.parquet").to_pylist()
    mms = [r for r in rows if r["op"] == "aten.mm.default"]
    assert mms
    for r in mms:
        a, b = (t["shape"] for t in json.loads(r["inputs_json"]))
        assert r["est_flops"] == 2 * a[0] * b[1] * a[1]
        assert r["cost_category"] == "matmul"
    sdpa = [r for r in rows if "scaled_dot_product" in r["op"] and "backward" not in r["op"]]
    assert sdpa
    for r in sdpa:
        q, k = (t["shape"] for t in json.loads(r["inputs_json"])[:2])
        assert r["est_flops"] == 4 * q[0] * q[1] * q[2] * k[2] * q[3]
    with (corpus_dir / "costs_by_model.csv").open(newline="") as fh:
        models = list(csv.DictReader(fh))
    assert sorted(m["model"] for m in models) == MODELS
    assert all(float(m["est_time_lb_us"]) > 0 and m["device"] == "H100" for m in models)
    with (corpus_dir / "costs_by_op.csv").open(newline="") as fh:
        by_op = list(csv.DictReader(fh))
    for model in MODELS:
        mine = [r for r in by_op if r["model"] == model and r["est_time_lb_us"]]
        times = [float(r["est_time_lb_us"]) for r in mine]
        assert times == sorted(times, reverse=True)
        assert sum(float(r["est_share"]) for r in mine) == pytest.approx(1.0, abs=1e-4)
    with (corpus_dir / "unknown_ops.csv").open(newline="") as fh:
        unknown = {r["op"]: int(r["calls"]) for r in csv.DictReader(fh)}
    without = {}
    for r in rows:
        if r["est_flops"] is None:
            without[r["op"]] = without.get(r["op"], 0) + r["calls"]
    assert unknown == without  # every call without an estimate is listed, nothing else


def test_corpus_device_options(run_dir: Path, tmp_path: Path) -> None:
    proc = kt("corpus", str(run_dir), "-o", str(tmp_path / "x"), "--device", "H800")
    assert proc.returncode == 2
    assert "unknown device 'H800' (valid: A100, B200, H100, H200, MI250, MI250X, MI300X)" in (
        proc.stderr
    )
    devices = tmp_path / "devices.yaml"
    devices.write_text(
        "devices:\n  my-npu: {name: My NPU, memory_bandwidth_tbs: 0.5, peak_tflops: {fp32: 4}}\n"
    )
    out = tmp_path / "npu"
    proc = kt(
        "corpus", str(run_dir), "-o", str(out), "--devices", str(devices), "--device", "my-npu"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "top ops by estimated time on my-npu (from shapes, not measured)" in proc.stdout
    with (out / "costs_by_model.csv").open(newline="") as fh:
        assert {r["device"] for r in csv.DictReader(fh)} == {"my-npu"}
