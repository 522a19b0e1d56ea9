"""Progress while a trace is read: a bar on a terminal (driven through a pseudo-terminal),
nothing when stderr is a pipe, and the loader's callbacks themselves."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kerneltracer.analysis.timeline.load.loader import LoadProgress, load_chrome_trace
from tests.timeline.traces import kernel, write_trace, x

# The CLI with the bar's 2 s delay set to 0, so that a trace of a few MiB shows it.
_CLI_NO_DELAY = (
    "import sys, kerneltracer.cli.read_progress as r; r.DELAY_S = 0.0; "
    "from kerneltracer.cli.main import main; sys.argv[0] = 'kerneltracer'; main()"
)


@pytest.fixture(scope="module")
def big_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """~12 MiB of text: several of the loader's 4 MiB blocks, so it reports mid-read."""
    events = []
    for i in range(30_000):
        events.append(x("aten::mm", "cpu_op", 10.0 * i, 5.0, **{"Input Dims": [[64, 64]] * 8}))
        events.append(kernel("gemm", 10.0 * i + 2, 4.0, corr=i))
    return write_trace(tmp_path_factory.mktemp("progress") / "big.json", events)


def _run_in_pty(args: list[str], cwd: Path) -> tuple[int, str]:
    """Run ``args`` with stdout and stderr on a pseudo-terminal; (exit status, its output)."""
    from tests.conftest import REPO_ROOT

    leader, follower = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "160", "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.Popen(
        args, stdin=follower, stdout=follower, stderr=follower, cwd=cwd, env=env
    )
    os.close(follower)
    chunks: list[bytes] = []
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 1.0)
        if ready:
            try:
                data = os.read(leader, 1 << 16)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    os.close(leader)
    return proc.wait(timeout=60), b"".join(chunks).decode(errors="replace")


def test_terminal_shows_events_rate_and_eta(big_trace: Path, tmp_path: Path) -> None:
    args = [sys.executable, "-c", _CLI_NO_DELAY, "timeline", str(big_trace), "-o"]
    status, output = _run_in_pty([*args, str(tmp_path / "out"), "--no-ops"], tmp_path)
    assert status == 0, output
    assert "reading big.json" in output
    assert "events/s" in output and "ETA" in output
    assert "wrote" in output  # the bar is gone, the command went on to the end


def test_pipe_gets_no_progress(big_trace: Path, tmp_path: Path) -> None:
    from tests.conftest import REPO_ROOT

    args = [sys.executable, "-c", _CLI_NO_DELAY, "timeline", str(big_trace), "-o"]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run(
        [*args, str(tmp_path / "out"), "--no-ops"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "reading" not in done.stderr and "events/s" not in done.stderr
    assert "\x1b[" not in done.stderr  # no cursor movement written to a log


def test_loader_reports_each_batch_and_the_end(big_trace: Path) -> None:
    seen: list[LoadProgress] = []
    trace = load_chrome_trace(big_trace, progress=seen.append)
    assert len(seen) >= 3  # mid-read reports, then the last one
    assert [p.done for p in seen] == [False] * (len(seen) - 1) + [True]
    events = [p.events for p in seen]
    assert events == sorted(events) and 0 < events[0] < events[-1] == len(trace)
    assert all(p.total_bytes == big_trace.stat().st_size for p in seen)
    assert 0 < seen[0].done_bytes < seen[-1].done_bytes == seen[-1].total_bytes
