"""`kerneltracer records` end to end, as a real subprocess."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.records.logs import TRANSDATA_ATOMIC, write_log

KT = [sys.executable, "-m", "kerneltracer.cli.main"]


def kt(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KT, *args], capture_output=True, text=True, timeout=120)


def test_records_writes_all_reports(tmp_path: Path) -> None:
    log = write_log(tmp_path, TRANSDATA_ATOMIC, name="npu_run.txt")
    proc = kt("records", str(log), "-o", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == [
        "npu_run_anomalies_0.csv", "npu_run_op_statistic_0.csv", "npu_run_summary_0.csv",
        "npu_run_tracing_0.json",
    ]  # fmt: skip
    assert "1 dump(s), 14 records, 7 events" in proc.stdout
    assert proc.stderr == ""
    summary = (tmp_path / "out" / "npu_run_summary_0.csv").read_text()
    assert "Tiling,2,10.000,20.000," in summary


def test_reporters_and_prefix(tmp_path: Path) -> None:
    log = write_log(tmp_path, TRANSDATA_ATOMIC)
    proc = kt(
        "records", str(log), "-o", str(tmp_path / "out"),
        "--reporters", "summary,tracing", "--prefix", "step1",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "step1_summary_0.csv", "step1_tracing_0.json",
    ]  # fmt: skip


def test_bad_lines_are_summarised_on_stderr(tmp_path: Path) -> None:
    log = write_log(
        tmp_path,
        """
        1 1 [A] [E] Start
        oops
        2 1 [A] [E] Finish
        3 1 [A] [E] End
        4 1 [B] [E] Start
    """,
    )
    proc = kt("records", str(log), "-o", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    assert "2 bad line(s) discarded" in proc.stderr
    assert "line 2: expected 5 space-separated fields, got 1" in proc.stderr
    assert "line 3: 'Finish' is neither Start nor End" in proc.stderr
    assert "unmatched_start: 1 (listed in the anomalies report)" in proc.stderr


def test_strict_fails_without_writing(tmp_path: Path) -> None:
    log = write_log(tmp_path, "1 1 [A] [E] Start\noops\n3 1 [A] [E] End")
    proc = kt("records", str(log), "-o", str(tmp_path / "out"), "--strict")
    assert proc.returncode == 1
    assert "error:" in proc.stderr and "1 bad line(s) (first: line 2" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()


def test_user_errors_are_one_line(tmp_path: Path) -> None:
    log = write_log(tmp_path, TRANSDATA_ATOMIC)
    bad_reporter = kt("records", str(log), "-o", str(tmp_path / "o"), "--reporters", "flame")
    assert bad_reporter.returncode == 2
    assert "unknown reporter 'flame' (valid: anomalies, op_statistic, summary, tracing)" in (
        bad_reporter.stderr
    )
    missing = kt("records", str(tmp_path / "nope.log"), "-o", str(tmp_path / "o"))
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    empty = kt(
        "records", str(write_log(tmp_path, "hello", name="e.log")), "-o", str(tmp_path / "o")
    )
    assert empty.returncode == 1 and "no Start/End records found" in empty.stderr
    for proc in (bad_reporter, missing, empty):
        assert "Traceback" not in proc.stderr
        assert len([ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]) == 1
