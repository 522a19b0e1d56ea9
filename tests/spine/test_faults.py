"""Workers that really misbehave end with the right status, and nothing of theirs survives.

Each fault lives in a real model's forward (remote code, tests/fixtures/faulty_model), so
the worker loads it the way it loads any model and the fault happens mid-trace.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import (
    kt,
    make_faulty_model,
    pid_alive,
    processes_under,
    status_of,
    write_config,
)

pytestmark = pytest.mark.e2e


def _run_fault(tmp_path: Path, env: dict[str, str], fault: str, **settings: object):
    model = make_faulty_model(tmp_path / "models", fault, seconds=600)
    cfg = write_config(
        tmp_path / "config.yaml",
        [{"path": str(model), "trust_remote_code": True, **settings}],
        defaults={"tracers": ["torch_dispatch"]},
    )
    proc = kt("run", str(cfg), "--kill-grace", "2", env=env, timeout=300)
    run_dir = tmp_path / "run"
    return proc, status_of(run_dir, f"faulty-{fault}/torch_dispatch"), run_dir


def test_segfault_is_crashed_sigsegv(tmp_path: Path, kt_env: dict[str, str]) -> None:
    proc, st, _ = _run_fault(tmp_path, kt_env, "segfault")
    assert proc.returncode == 1, proc.stderr
    assert st["status"] == "crashed"
    assert st["exit_code"] == -11
    assert st["signal"] == "SIGSEGV"
    # faulthandler's dump points at the model code that crashed (in the warm-up forward).
    assert "modeling_faulty.py" in st["reason"] and "during warmup" in st["reason"]


def test_python_memory_error_is_oom(tmp_path: Path, kt_env: dict[str, str]) -> None:
    proc, st, _ = _run_fault(tmp_path, kt_env, "memory_error")
    assert proc.returncode == 1
    assert st["status"] == "oom"
    assert st["error"]["root_cause"].startswith("MemoryError")
    assert st["error"]["phase"] == "warmup"


def test_an_allocation_beyond_the_machine_is_failed_not_oom(
    tmp_path: Path, kt_env: dict[str, str]
) -> None:
    """1 PiB asked of the CPU allocator: refused at once, no memory ran out (issue 38)."""
    _proc, st, _ = _run_fault(tmp_path, kt_env, "allocator")
    assert st["status"] == "failed"
    assert st["error"]["root_cause"].startswith("one allocation of 1.0 PiB")
    assert "can't allocate memory" in st["error"]["message"]


def test_memory_ceiling_over_the_tree_is_oom(tmp_path: Path, kt_env: dict[str, str]) -> None:
    _proc, st, run_dir = _run_fault(tmp_path, kt_env, "grow", max_rss_gb=1.0)
    assert st["status"] == "oom"
    assert "exceeded max_rss_gb 1" in st["reason"]
    assert st["tree_peak_rss_bytes"] > 1.0 * 1024**3
    assert processes_under(run_dir) == []


def test_exception_is_failed_with_root_cause_line(tmp_path: Path, kt_env: dict[str, str]) -> None:
    proc, st, _ = _run_fault(tmp_path, kt_env, "exception")
    assert proc.returncode == 1
    assert st["status"] == "failed"
    assert (
        st["error"]["root_cause"]
        == "ValueError: deliberate failure: the faulty model refuses to run"
    )
    assert "modeling_faulty.py" in st["error"]["location"]
    assert st["reason"].startswith("ValueError: deliberate failure")
    # The table printed at the end carries the root cause too.
    assert "deliberate failure" in proc.stdout


def test_exit_without_status_is_failed(tmp_path: Path, kt_env: dict[str, str]) -> None:
    _, st, _ = _run_fault(tmp_path, kt_env, "exit")
    assert st["status"] == "failed"
    assert st["exit_code"] == 3
    assert "exit" in st["reason"] or "code 3" in st["reason"]


def test_sigkill_from_outside_is_classified_oom_killer(
    tmp_path: Path, kt_env: dict[str, str]
) -> None:
    _, st, _ = _run_fault(tmp_path, kt_env, "sigkill")
    assert st["status"] == "oom"
    assert "OOM killer" in st["reason"]


def test_writes_cut_short_by_a_kill_leave_no_temp_files(
    tmp_path: Path, kt_env: dict[str, str]
) -> None:
    _, st, run_dir = _run_fault(tmp_path, kt_env, "half_write")
    job_dir = run_dir / "jobs/faulty-half_write/torch_dispatch"
    assert st["status"] == "oom"  # its status is the run's, not the half-written one
    assert not [p for p in job_dir.rglob("*") if p.name.endswith(".tmp")]
    assert (job_dir / "worker.log").exists()


def test_hang_times_out_and_kills_grandchildren(tmp_path: Path, kt_env: dict[str, str]) -> None:
    _proc, st, run_dir = _run_fault(tmp_path, kt_env, "hang", timeout_s=25)
    assert st["status"] == "timeout"
    assert "no result after 25 s during warmup" in st["reason"]
    pids = [
        int(p)
        for p in (run_dir / "jobs/faulty-hang/torch_dispatch/grandchildren.pids")
        .read_text()
        .split()
    ]
    assert len(pids) == 2  # one in the worker's group, one that escaped it with setsid
    assert not any(pid_alive(p) for p in pids)
    assert processes_under(run_dir) == []


def test_failures_do_not_stop_the_batch(
    tmp_path: Path, kt_env: dict[str, str], tiny_models: dict[str, Path]
) -> None:
    bad = make_faulty_model(tmp_path / "models", "segfault")
    cfg = write_config(
        tmp_path / "config.yaml",
        [
            {"path": str(bad), "trust_remote_code": True},
            {"path": str(tiny_models["tiny-gpt2"])},
        ],
        defaults={"tracers": ["torch_dispatch"]},
    )
    proc = kt("run", str(cfg), env=kt_env)
    assert proc.returncode == 1
    run_dir = tmp_path / "run"
    assert status_of(run_dir, "faulty-segfault/torch_dispatch")["status"] == "crashed"
    assert status_of(run_dir, "tiny-gpt2/torch_dispatch")["status"] == "ok"
