"""A long read shows its progress on a terminal (driven through a pseudo-terminal here),
and nothing when stderr is not one."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path

import pytest

from kerneltracer.inputguard import note_read, observing_reads

# The CLI with the bar shown at once (a test log reads in far less than the 2 s).
_SCRIPT = (
    "import sys; import kerneltracer.cli.read_progress as r; r.DELAY_S = 0.0; "
    "from kerneltracer.cli.main import main; sys.argv = ['kerneltracer', *sys.argv[1:]]; main()"
)


def _cli(args: list[str]) -> list[str]:
    return [sys.executable, "-c", _SCRIPT, *args]


def _run_in_pty(cmd: list[str]) -> tuple[int, str]:
    main_fd, child_fd = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "160"}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen(cmd, stdin=child_fd, stdout=child_fd, stderr=child_fd, env=env)
    os.close(child_fd)
    chunks = []
    while True:
        ready, _, _ = select.select([main_fd], [], [], 60)
        if not ready:
            proc.kill()
            break
        try:
            data = os.read(main_fd, 1 << 16)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(main_fd)
    return proc.wait(), b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.parametrize("command", ["logs", "compile-health"])
def test_a_terminal_sees_bytes_lines_rate_and_time_left(
    command: str, testdata_dir: Path, tmp_path: Path
) -> None:
    # Several blocks (1 MiB each): a rate needs more than one.
    log = testdata_dir / "tlparse" / "multi_rank_logs" / "dedicated_log_torch_trace_rank_1.log"
    rc, shown = _run_in_pty(_cli([command, str(log), "-o", str(tmp_path / "out")]))
    assert rc == 0, shown
    # What is read: the log's name (logs), or its logs (compile-health, which can take many).
    assert f"reading {log.name[:20]}" in shown or "reading logs" in shown
    lines = log.read_bytes().count(b"\n")
    assert f"{lines:,} lines" in shown
    assert "3.6/3.6 MB" in shown  # bytes read of the total
    assert re.search(r"[0-9.]+ [kMG]?B/s", shown), shown  # the rate
    assert re.search(r"\d:\d\d:\d\d", shown), shown  # time left


def test_no_terminal_no_progress(testdata_dir: Path, tmp_path: Path) -> None:
    log = testdata_dir / "tlparse" / "cache_hit_miss.log"
    proc = subprocess.run(
        _cli(["logs", str(log), "-o", str(tmp_path / "out")]), capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert "reading" not in proc.stderr and "━" not in proc.stderr
    assert "\x1b[" not in proc.stderr


def test_readers_report_every_byte_and_line(testdata_dir: Path, tmp_path: Path) -> None:
    from kerneltracer.analysis.structured_logs import parse

    log = testdata_dir / "tlparse" / "simple.log"
    seen = [0, 0]

    def watch(nbytes: int, nlines: int) -> None:
        seen[0] += nbytes
        seen[1] += nlines

    with observing_reads(watch):
        parse(log, tmp_path / "inter")
    note_read(10, 1)  # outside the block: no one watches
    data = log.read_bytes()
    assert seen == [len(data), data.count(b"\n")]
