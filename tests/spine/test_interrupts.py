"""Stopping the orchestrator mid-run: SIGINT stops cleanly, SIGKILL leaves no orphan, and a
rerun completes only the jobs that are missing. A second orchestrator is refused."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from tests.helpers import (
    kt,
    kt_popen,
    make_faulty_model,
    processes_under,
    status_of,
    wait_until,
    write_config,
)

pytestmark = pytest.mark.e2e


def _setup(tmp_path: Path, tiny_models: dict[str, Path]) -> tuple[Path, Path, Path]:
    slow = make_faulty_model(tmp_path / "models", "slow", seconds=600, name="slow")
    cfg = write_config(
        tmp_path / "config.yaml",
        [
            {"path": str(tiny_models["tiny-gpt2"])},
            {"path": str(slow), "trust_remote_code": True},
            {"path": str(tiny_models["tiny-bert"])},
        ],
        defaults={"tracers": ["torch_dispatch"]},
    )
    return cfg, tmp_path / "run", slow


def _make_fast(slow_model: Path) -> None:
    config = json.loads((slow_model / "config.json").read_text())
    config["fault_seconds"] = 0
    (slow_model / "config.json").write_text(json.dumps(config))


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["sigint", "sigkill"])
def test_stop_mid_run_then_rerun_completes_only_missing(
    tmp_path: Path, kt_env: dict[str, str], tiny_models: dict[str, Path], sig: signal.Signals
) -> None:
    cfg, run_dir, slow = _setup(tmp_path, tiny_models)
    orchestrator = kt_popen("run", str(cfg), "--kill-grace", "2", env=kt_env)
    started = run_dir / "jobs/slow/torch_dispatch/slow.started"
    try:
        assert wait_until(started.exists, timeout=120), "the slow job never started"
        orchestrator.send_signal(sig)
        orchestrator.wait(timeout=60)
    finally:
        if orchestrator.poll() is None:
            orchestrator.kill()
    if sig == signal.SIGINT:
        assert orchestrator.returncode == 130
        st = status_of(run_dir, "slow/torch_dispatch")
        assert st["status"] == "interrupted"
        assert "SIGINT" in st["reason"]
    # Whether stopped cleanly or killed outright, no worker or grandchild may survive.
    assert wait_until(lambda: processes_under(run_dir) == [], timeout=30), processes_under(run_dir)
    first = status_of(run_dir, "tiny-gpt2/torch_dispatch")
    assert first["status"] == "ok"
    assert not (run_dir / "jobs/tiny-bert/torch_dispatch/_TRACE_STATUS.json").exists()
    if sig == signal.SIGKILL:
        # The report must not call a run whose orchestrator died "in progress".
        assert kt("report", str(run_dir), env=kt_env).returncode == 0
        summary = json.loads((run_dir / "report" / "run_summary.json").read_text())
        assert (summary["in_progress"], summary["abandoned"]) == (False, True)

    _make_fast(slow)
    rerun = kt("run", str(cfg), env=kt_env)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert "2 to run, 1 already complete" in rerun.stderr
    assert status_of(run_dir, "tiny-gpt2/torch_dispatch")["attempt"] == first["attempt"]
    assert status_of(run_dir, "slow/torch_dispatch")["status"] == "ok"
    assert status_of(run_dir, "tiny-bert/torch_dispatch")["status"] == "ok"


def test_second_orchestrator_on_same_run_dir_is_refused(
    tmp_path: Path, kt_env: dict[str, str], tiny_models: dict[str, Path]
) -> None:
    cfg, run_dir, _ = _setup(tmp_path, tiny_models)
    first = kt_popen("run", str(cfg), "--kill-grace", "1", env=kt_env)
    try:
        assert wait_until((run_dir / "jobs/slow/torch_dispatch/slow.started").exists, timeout=120)
        second = kt("run", str(cfg), env=kt_env, timeout=60)
    finally:
        first.send_signal(signal.SIGINT)
        first.wait(timeout=60)
    assert second.returncode == 1
    lines = second.stderr.strip().splitlines()
    assert lines == [
        f"error: run dir {run_dir} is in use by another kerneltracer (pid {first.pid} on "
        f"{lines[0].split(' on ')[1].split(')')[0]}); wait for it to finish or choose "
        "another output_dir"
    ]
    assert "Traceback" not in second.stderr


def test_sigterm_to_the_worker_alone_is_interrupted_and_the_batch_goes_on(
    tmp_path: Path, kt_env: dict[str, str], tiny_models: dict[str, Path]
) -> None:
    # What a batch system does at a time limit: signal every process of the job directly.
    cfg, run_dir, _ = _setup(tmp_path, tiny_models)
    orchestrator = kt_popen("run", str(cfg), "--kill-grace", "2", env=kt_env)
    started = run_dir / "jobs/slow/torch_dispatch/slow.started"
    try:
        assert wait_until(started.exists, timeout=120), "the slow job never started"
        os.kill(int(started.read_text()), signal.SIGTERM)
        orchestrator.wait(timeout=120)
    finally:
        if orchestrator.poll() is None:
            orchestrator.kill()
    assert orchestrator.returncode == 1
    st = status_of(run_dir, "slow/torch_dispatch")
    assert (st["status"], st["reason"]) == ("interrupted", "worker received SIGTERM during warmup")
    assert status_of(run_dir, "tiny-bert/torch_dispatch")["status"] == "ok"
