"""Every op of a fake run has its module path (issue 38, item 13).

The published Qwen2.5-72B-Instruct config at its full 80 layers (tests/fixtures/hub_configs),
traced with `weights: fake` at 16 tokens (about 15 s here), then through `corpus`: each
dispatch row credits all its calls to module paths, and `costs_by_module.csv` has no
"(paths not recorded)" row, with down_proj's matmul credited all 80 of its calls.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from tests.helpers import FIXTURES, kt, write_config

pytestmark = pytest.mark.e2e

QWEN_72B = FIXTURES / "hub_configs" / "Qwen--Qwen2.5-72B-Instruct"


def test_an_80_layer_fake_run_credits_every_call_to_a_module(
    tmp_path: Path, kt_env: dict[str, str]
) -> None:
    model = tmp_path / "qwen72b"
    model.mkdir()
    shutil.copy(QWEN_72B / "config.json", model / "config.json")
    layers = json.loads((model / "config.json").read_text())["num_hidden_layers"]
    assert layers == 80
    cfg = write_config(
        tmp_path / "config.yaml",
        [{"path": str(model)}],
        defaults={"weights": "fake", "seq_len": 16, "tracers": ["torch_dispatch"]},
    )
    run = kt("run", str(cfg), env=kt_env, timeout=300)
    assert run.returncode == 0, run.stderr
    job_dir = tmp_path / "run" / "jobs" / "qwen72b" / "torch_dispatch"
    # Fake weights: no untraced warm-up forward (see test_no_warmup), only the traced one.
    phases = json.loads((job_dir / "_TRACE_STATUS.json").read_text())["phases"]
    assert sorted(phases) == ["load", "trace", "write"]
    rows = [json.loads(line) for line in (job_dir / "dispatch_ops.jsonl").read_text().splitlines()]
    forward = [r for r in rows if r["phase"] == "forward"]
    assert forward
    for row in forward:
        assert sum(row["modules"].values()) == row["count"], row["op"]
    down = [
        r
        for r in forward
        if r["op"] == "aten.mm.default" and any(p.endswith("mlp.down_proj") for p in r["modules"])
    ]
    assert [r["modules"] for r in down] == [{"model.layers.*.mlp.down_proj": layers}]

    out = tmp_path / "corpus"
    corpus = kt("corpus", str(tmp_path / "run"), "-o", str(out), env=kt_env, timeout=300)
    assert corpus.returncode == 0, corpus.stderr
    with open(out / "costs_by_module.csv", newline="") as fh:
        by_module = {r["module"]: r for r in csv.DictReader(fh)}
    assert "(paths not recorded)" not in by_module
    with open(out / "costs_by_model.csv", newline="") as fh:
        (by_model,) = list(csv.DictReader(fh))
    assert sum(int(r["calls"]) for r in by_module.values()) == int(by_model["calls"])
