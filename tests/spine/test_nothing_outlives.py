"""Nothing a job started outlives it (issue 38, item 8).

- Remote code that double-forks and calls setsid leaves a daemon whose parent is init and
  whose session is its own: neither the worker's process-group kill nor the supervisor's
  tree sampling sees it. The worker is a child subreaper (Linux), so the daemon re-parents
  to the worker, which ends every descendant when the job ends, ok or not.
- A worker server whose orchestrator is SIGKILLed during its preload goes at once: the
  parent-death signal acts during the preload too.

Processes are counted by a marker in their command line; the tests only ever kill
processes they started (through the run) and that carry their marker.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from pathlib import Path

import psutil
import pytest

from tests.helpers import (
    FIXTURES,
    kt,
    kt_popen,
    make_faulty_model,
    processes_under,
    status_of,
    wait_until,
    write_config,
)

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="subreapers are Linux's"),
]

DAEMON_MARKER = "kt-test-daemon"


def _marked(marker: str, where: Path) -> list[psutil.Process]:
    """Live processes whose command line holds ``marker`` and a path under ``where``."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        if proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        cmd = " ".join(proc.info["cmdline"] or [])
        if marker in cmd and str(where) in cmd:
            found.append(proc)
    return found


def _kill_marked(marker: str, where: Path) -> None:
    for proc in _marked(marker, where):
        with contextlib.suppress(psutil.Error):
            proc.kill()


@pytest.mark.parametrize("flag", ["--preload", "--no-preload"])
def test_a_daemon_started_by_remote_code_ends_with_its_job(
    tmp_path: Path, kt_env: dict[str, str], flag: str
) -> None:
    model = make_faulty_model(tmp_path / "models", "daemon", name="daemon")
    cfg = write_config(
        tmp_path / "config.yaml",
        [{"path": str(model), "trust_remote_code": True}],
        defaults={"tracers": ["torch_dispatch"]},
    )
    run_dir = tmp_path / "run"
    try:
        proc = kt("run", str(cfg), flag, "--kill-grace", "2", env=kt_env, timeout=300)
        assert proc.returncode == 0, proc.stderr
        assert status_of(run_dir, "daemon/torch_dispatch")["status"] == "ok"
        pid_file = run_dir / "jobs/daemon/torch_dispatch/daemon.pid"
        # The daemon did run during the job (so its absence below means it was ended).
        assert int(pid_file.read_text()) > 0
        assert _marked(DAEMON_MARKER, tmp_path) == []
        assert processes_under(run_dir) == []
    finally:
        _kill_marked(DAEMON_MARKER, tmp_path)


def test_sigkill_of_the_run_during_the_servers_preload_leaves_nothing(
    tmp_path: Path, kt_env: dict[str, str]
) -> None:
    """The preload is held in a ten-minute Python sleep (tests/fixtures/slow_preload): the
    server must not wait for it to end before it obeys its parent-death signal."""
    model = make_faulty_model(tmp_path / "models", "none", name="m")
    cfg = write_config(
        tmp_path / "config.yaml",
        [{"path": str(model), "trust_remote_code": True}],
        defaults={"tracers": ["torch_dispatch"]},
    )
    run_dir = tmp_path / "run"
    preloading = tmp_path / "preloading"
    env = {
        **kt_env,
        "PYTHONPATH": str(FIXTURES / "slow_preload"),
        "KT_TEST_SLOW_PRELOAD": str(preloading),
    }
    orchestrator = kt_popen("run", str(cfg), "--preload", env=env)
    try:
        assert wait_until(preloading.exists, timeout=120), "the server never started preloading"
        servers = [p for p in processes_under(run_dir) if "forkserver" in " ".join(p.cmdline())]
        assert [p.pid for p in servers] == [int(preloading.read_text())]
        orchestrator.send_signal(signal.SIGKILL)
        orchestrator.wait(timeout=60)
        gone = wait_until(lambda: processes_under(run_dir) == [], timeout=5)
        assert gone, processes_under(run_dir)
    finally:
        if orchestrator.poll() is None:
            orchestrator.kill()
            orchestrator.wait()
        for proc in processes_under(run_dir):  # what this test's run left, if anything
            with contextlib.suppress(psutil.Error):
                proc.kill()
