"""Decide how a worker ended, from what the orchestrator saw and what the worker left.

The worker reports ok / failed / oom / unsupported itself in ``_TRACE_STATUS.json``. When it
could not (killed, crashed, exited without a status), the orchestrator classifies from the
exit code, the reason it stopped the worker, and the tail of ``worker.log``.
"""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass
from pathlib import Path

from kerneltracer.core.rootcause import last_exception_line
from kerneltracer.core.status import JobStatus
from kerneltracer.core.stop import StopReason
from kerneltracer.process.supervisor import signal_name

_STDLIB = re.compile(r"/lib/python3\.\d+/(?!site-packages/|dist-packages/)|^<frozen")
_FAULT_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+) in (\S+)')


@dataclass(frozen=True)
class Outcome:
    status: JobStatus
    reason: str
    signal: str | None = None


def classify_exit(
    returncode: int, stop_reason: StopReason | None, log_path: Path, phase: str | None
) -> Outcome:
    """Classify a worker that left no usable status of its own."""
    sig = signal_name(returncode)
    where = f" during {phase}" if phase else ""
    if stop_reason is not None:
        return Outcome(stop_reason.kind.status, f"{stop_reason.detail}{where}", sig)
    tail = _read_tail(log_path)
    if returncode < 0 and -returncode == signal.SIGKILL:
        return Outcome(
            JobStatus.OOM,
            f"killed by SIGKILL{where}, not by kerneltracer: most likely the kernel OOM killer",
            sig,
        )
    if returncode < 0:
        frame = fault_frame(tail)
        at = f" at {frame}" if frame else ""
        return Outcome(JobStatus.CRASHED, f"{sig} (exit {returncode}){where}{at}", sig)
    line = last_exception_line(tail)
    return Outcome(
        JobStatus.FAILED, line or f"worker exited with code {returncode}{where} and no status", sig
    )


def _read_tail(log_path: Path, max_bytes: int = 64 * 1024) -> list[str]:
    try:
        with open(log_path, "rb") as fh:
            fh.seek(0, 2)
            size = fh.tell()
            fh.seek(max(0, size - max_bytes))
            data = fh.read()
    except OSError:
        return []
    return data.decode("utf-8", errors="replace").splitlines()


def fault_frame(lines: list[str]) -> str | None:
    """Innermost interesting frame of the crashing thread in a faulthandler dump.

    Standard-library frames (ctypes, threading) say little about why a process crashed,
    so the innermost frame outside the stdlib wins; site-packages (torch, model code) count.
    """
    frames: list[str] = []
    in_current = False
    for line in lines:
        if line.startswith("Current thread"):
            in_current, frames = True, []
        elif in_current:
            m = _FAULT_FRAME.match(line)
            if not m:
                break
            frames.append(f"{m.group(1)}:{m.group(2)} in {m.group(3)}")
    if not frames:
        return None
    return next((f for f in frames if not _STDLIB.search(f)), frames[0])


def interrupted_phase(phase_log: Path) -> str | None:
    """The phase that had started and not ended when the worker stopped."""
    open_phases: list[str] = []
    try:
        lines = phase_log.read_text(errors="replace").splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split()
        if len(parts) != 5:
            continue
        phase = parts[3].strip("[]")
        if parts[4] == "Start":
            open_phases.append(phase)
        elif parts[4] == "End" and phase in open_phases:
            open_phases.remove(phase)
    return open_phases[-1] if open_phases else None
