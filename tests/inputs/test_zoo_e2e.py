"""Every architecture of the zoo through the orchestrator and real workers, eval and train.

The full matrix with every tracer (torch_profiler, print_fx, print_aten, torch_compile too)
is bench/bench_zoo.py: at 2 cores it takes far longer than a test suite may. Here each
architecture runs torch_dispatch, which exercises the whole input path (load, inputs,
warm-up step, traced step, backward through the head's loss).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kerneltracer.worker.frameworks.huggingface.zoo import ZOO, build_zoo
from tests.helpers import kt, status_of, write_config

# 72 worker processes: ~3 min on an idle 2-core machine, far longer on a busy one.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(2400)]


@pytest.fixture(scope="module")
def zoo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("zoo-run")
    build_zoo(root / "zoo")
    models = []
    for entry in ZOO:
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
    for entry in ZOO:
        key = f"{entry.name}/torch_dispatch" + ("" if mode == "eval" else ".train")
        status = status_of(zoo_run, key)
        if status["status"] != "ok":
            not_ok[entry.name] = status.get("reason")
            continue
        assert status["inputs"], f"{key}: no inputs recorded"
        phases = status["summary"]["calls_by_phase"]
        assert ("backward" in phases) == (mode == "train"), f"{key}: {phases}"
    assert not not_ok, not_ok
