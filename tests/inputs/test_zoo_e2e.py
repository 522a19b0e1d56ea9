"""Every tested architecture of the zoo through the orchestrator and real workers, eval and
train (siblings run in bench/bench_zoo.py).

The full matrix with every tracer (torch_profiler, print_fx, print_aten, torch_compile too)
is bench/bench_zoo.py: at 2 cores it takes far longer than a test suite may. Here each
architecture runs torch_dispatch, which exercises the whole input path (load, inputs,
warm-up step, traced step, backward through the head's loss).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from kerneltracer.worker.frameworks.huggingface.zoo import build_zoo
from tests.helpers import kt, status_of, write_config
from tests.inputs.zooset import TESTED

# Without scipy DETR's training loss cannot run: the job says so, eval is unaffected.
MISSING_SCIPY = importlib.util.find_spec("scipy") is None
HAS_SACREMOSES = importlib.util.find_spec("sacremoses") is not None
# Their last feature maps are 1x1 at the zoo's image size: BatchNorm cannot train at the
# default batch_size 1, and the reason says what to set.
BATCHNORM_AT_ONE = {"mobilenet-v2"}

# 90 worker processes: ~4 min on an idle 2-core machine, far longer on a busy one.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(2400)]


@pytest.fixture(scope="module")
def zoo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("zoo-run")
    build_zoo(root / "zoo", [e.name for e in TESTED])
    models = []
    for entry in TESTED:
        path = str(root / "zoo" / entry.name)
        models.append({"path": path})
        models.append({"path": path, "mode": "train"})
    cfg = write_config(
        root / "config.yaml", models, defaults={"tracers": ["torch_dispatch"], "seq_len": 12}
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "KT_"))}
    env["HF_HOME"] = str(root / "hf-home")
    proc = kt("run", str(cfg), "--jobs", "2", env=env, timeout=2300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return root / "run"


@pytest.mark.parametrize("mode", ["eval", "train"])
def test_every_architecture_traces(zoo_run: Path, mode: str) -> None:
    not_ok = {}
    for entry in TESTED:
        key = f"{entry.name}/torch_dispatch" + ("" if mode == "eval" else ".train")
        status = status_of(zoo_run, key)
        if entry.name == "detr" and mode == "train" and MISSING_SCIPY:
            assert status["status"] == "unsupported", status
            assert status["error"]["missing_dependency"] == "scipy"
            assert "missing dependency: scipy is not installed" in status["reason"]
            assert "-m pip install scipy" in status["reason"]
            continue
        if entry.name in BATCHNORM_AT_ONE and mode == "train":
            assert status["status"] == "unsupported", status
            assert "set batch_size: 2" in status["reason"], status["reason"]
            continue
        if status["status"] != "ok":
            not_ok[entry.name] = status.get("reason")
            continue
        assert status["inputs"], f"{key}: no inputs recorded"
        phases = status["summary"]["calls_by_phase"]
        assert ("backward" in phases) == (mode == "train"), f"{key}: {phases}"
    assert not not_ok, not_ok


def test_tokenizer_needing_a_missing_package_falls_back_to_random_ids(zoo_run: Path) -> None:
    status = status_of(zoo_run, "xlm/torch_dispatch")
    assert status["status"] == "ok"
    notes = " ".join(status.get("notes") or [])
    if HAS_SACREMOSES:
        assert "tokenizer not loaded" not in notes
    else:
        assert "tokenizer not loaded, missing dependency: sacremoses" in notes
        assert "seeded random ids" in notes
