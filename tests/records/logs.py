"""Helpers to write hand-made record logs for the tests."""

from __future__ import annotations

from pathlib import Path

from kerneltracer.analysis.records import Analysis, analyse

DUMP_START = "Profiler version: 1.0, dump start, records num: {n}"
DUMP_END = "Profiling dump end"


def write_log(tmp_path: Path, text: str, name: str = "ge.log") -> Path:
    path = tmp_path / name
    lines = [ln.strip() for ln in text.strip().splitlines()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def dump(records: str) -> str:
    """Wrap record lines in GE's dump markers, with the right record count."""
    body = [ln.strip() for ln in records.strip().splitlines() if ln.strip()]
    return "\n".join([DUMP_START.format(n=len(body)), *body, DUMP_END])


def analyse_text(tmp_path: Path, text: str) -> Analysis:
    return analyse(write_log(tmp_path, text))


# The seed's Transdata example: a 20 µs Tiling made of the op's own 10 µs tiling and the
# 10 µs tiling of its atomic clean; then a KernelLaunch holding the atomic launch and the own.
TRANSDATA_ATOMIC = dump("""
    1000000 7 [TransData] [OpExecute] Start
    1000000 7 [TransData] [Tiling] Start
    1000000 7 UNKNOWN(-1) [Tiling] Start
    1010000 7 UNKNOWN(-1) [Tiling] End
    1010000 7 UNKNOWN(-1) [Tiling] Start
    1020000 7 UNKNOWN(-1) [Tiling] End
    1020000 7 [TransData] [Tiling] End
    1021000 7 [TransData] [KernelLaunch] Start
    1021000 7 UNKNOWN(-1) [KernelLaunch] Start
    1024000 7 UNKNOWN(-1) [KernelLaunch] End
    1024000 7 UNKNOWN(-1) [KernelLaunch] Start
    1026000 7 UNKNOWN(-1) [KernelLaunch] End
    1026000 7 [TransData] [KernelLaunch] End
    1030000 7 [TransData] [OpExecute] End
""")
