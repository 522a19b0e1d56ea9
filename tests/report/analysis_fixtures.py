"""Misbehaving analyses for the isolation tests, loaded with ``analyze --import``.

Each applies to every ok job (the real run has one), so each misbehaves exactly once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from kerneltracer.analysis.base import AnalysisJob, JobAnalysis

GRANDCHILD_PID = "grandchild.pid"


class _OnOkJobs(JobAnalysis):
    def applies(self, job: AnalysisJob) -> bool:
        return job.status == "ok"


class HangAnalysis(_OnOkJobs):
    """Starts a helper process, then never returns: its whole process group must die."""

    name = "hang"

    def run(self, job: AnalysisJob, out_dir: Path) -> list[Path]:
        helper = subprocess.Popen(["sleep", "600"])
        (out_dir / GRANDCHILD_PID).write_text(str(helper.pid))
        print("hanging now", flush=True)
        while True:
            time.sleep(1)


class SegfaultAnalysis(_OnOkJobs):
    name = "segfault"

    def run(self, job: AnalysisJob, out_dir: Path) -> list[Path]:
        os.kill(os.getpid(), signal.SIGSEGV)
        return []


class MemoryHogAnalysis(_OnOkJobs):
    """Asks for 4 GiB (calloc'd, so untouched: harmless should the ceiling not hold)."""

    name = "hog"

    def run(self, job: AnalysisJob, out_dir: Path) -> list[Path]:
        block = bytearray(4 << 30)
        del block
        return []


class ExitAnalysis(_OnOkJobs):
    """Calls sys.exit: an analysis bug, recorded as a failure, the worker lives on."""

    name = "exits"

    def run(self, job: AnalysisJob, out_dir: Path) -> list[Path]:
        raise SystemExit(3)


ANALYSES: dict[str, type[JobAnalysis]] = {
    "hang": HangAnalysis,
    "segfault": SegfaultAnalysis,
    "hog": MemoryHogAnalysis,
    "exits": ExitAnalysis,
}
