"""Broken TORCH_TRACE logs are never healthy (issue 38): a log cut short (a compile that
starts and never ends, a payload cut short, a last line without its newline) is
``truncated``; a log that cannot be read as one (binary, a line over the limit) is
``unusable``. Both are states of the table, JSON and page, say why in one line, are left
out of the pass rate and the compile time, and make ``compile-health`` exit non-zero.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kerneltracer.analysis.compile_health.fleet import logs_health, run_health
from kerneltracer.analysis.structured_logs.records import MAX_LINE_BYTES
from tests.conftest import REPO_ROOT
from tests.helpers import KT
from tests.report.runs import make_run, status

# simple.log: one compile [0/0]; its compilation_metrics (the compile's end) is line 2189,
# the record at line 914 has a payload running to line 1205. Its last line has no newline
# (as tlparse's copy has it): a whole log all the same.
METRICS_LINE = 2189


def _simple(testdata_dir: Path) -> bytes:
    return (testdata_dir / "tlparse" / "simple.log").read_bytes()


def _lines(data: bytes, n: int) -> bytes:
    return b"".join(data.splitlines(keepends=True)[:n])


@pytest.fixture
def damaged(testdata_dir: Path, tmp_path: Path) -> dict[str, Path]:
    data = _simple(testdata_dir)
    cases = {
        "never_ended": _lines(data, METRICS_LINE - 1),  # every record whole, no end
        "payload_cut": _lines(data, 1000),  # cut at a line inside a payload
        # a string-table line (no payload) before the compile, cut in its middle
        "line_cut": _lines(data, 89) + data.splitlines()[89][:60],
        "binary": b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 64,
        "long_line": b"V" * (MAX_LINE_BYTES + 1),
    }
    out = {}
    for name, content in cases.items():
        out[name] = tmp_path / f"{name}.log"
        out[name].write_bytes(content)
    return out


EXPECT = {
    "never_ended": ("truncated", r"compile \[0/0\] started and never ended"),
    "payload_cut": ("truncated", r"the payload of the record at line 914 is cut short"),
    "line_cut": ("truncated", r"its last line \(90\) has no end and does not parse"),
    "binary": ("unusable", r"binary.log: no TORCH_TRACE records \(\d+ lines read"),
    "long_line": ("unusable", r"line 1 is longer than 64 MiB"),
}


@pytest.mark.parametrize("case", sorted(EXPECT))
def test_damaged_log_is_its_own_state(damaged: dict[str, Path], case: str) -> None:
    import re

    fleet = logs_health([damaged[case]])
    (job,) = fleet.jobs
    state, reason = EXPECT[case]
    assert job.compile_status == state
    assert job.fail_reason is not None and re.search(reason, job.fail_reason), job.fail_reason
    assert "\n" not in job.fail_reason
    row = job.row()
    assert row["compile_time_s"] is None  # not 0.0: unknown
    summary = fleet.summary()
    assert summary["pass_rate"] is None  # nothing said whether it compiled
    assert summary["status_counts"][state] == 1


def test_whole_log_stays_ok(testdata_dir: Path, tmp_path: Path) -> None:
    log = tmp_path / "simple.log"
    log.write_bytes(_simple(testdata_dir))
    (job,) = logs_health([log]).jobs
    assert job.compile_status == "ok" and job.fail_reason is None
    assert job.row()["compile_time_s"] > 0


def test_a_restart_that_ends_in_its_next_attempt_is_no_truncation(testdata_dir: Path) -> None:
    # comp_metrics.log: [0/0] and [1/0] start in attempt 0 and end (metrics) in attempt 1.
    (job,) = logs_health([testdata_dir / "tlparse" / "comp_metrics.log"]).jobs
    assert job.compile_status == "ok", job.fail_reason


def test_cli_writes_the_states_then_exits_non_zero(
    damaged: dict[str, Path], testdata_dir: Path, tmp_path: Path
) -> None:
    good = tmp_path / "good.log"
    good.write_bytes(_simple(testdata_dir))
    out = tmp_path / "out"
    args = [str(damaged["never_ended"]), str(damaged["binary"]), str(good), "-o", str(out)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), *sys.path])}
    done = subprocess.run(
        [*KT, "compile-health", *args], capture_output=True, text=True, timeout=120, env=env
    )
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 1, done.stdout + done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: 2 of 3 compile log(s) cannot be trusted:"), last
    assert "never_ended.log: truncated" in last and "binary.log: unusable" in last
    doc = json.loads((out / "compile_health.json").read_text())
    states = {Path(j["job"]).name: j["compile_status"] for j in doc["jobs"]}
    assert states == {"never_ended.log": "truncated", "binary.log": "unusable", "good.log": "ok"}
    assert doc["summary"]["pass_rate"] == 1.0  # only the log that can be trusted counts
    with open(out / "compile_health.csv") as fh:
        rows = {Path(r["job"]).name: r for r in csv.DictReader(fh)}
    assert rows["never_ended.log"]["compile_status"] == "truncated"
    assert rows["never_ended.log"]["compile_time_s"] == ""
    assert "started and never ended" in rows["never_ended.log"]["fail_reason"]
    page = (out / "compile_health.html").read_text()
    assert 'class="truncated"' in page and "started and never ended" in page
    assert 'class="unusable"' in page


def test_run_dir_job_ok_with_a_truncated_log(damaged: dict[str, Path], tmp_path: Path) -> None:
    log = {"path": "torch_trace/t.log", "kind": "torch_trace_log", "size": 1, "sha256": "0"}
    run = make_run(
        tmp_path / "run",
        {
            "cut/torch_compile": status("cut/torch_compile", "cut", outputs=[log]),
            "died/torch_compile": status(
                "died/torch_compile", "died", "crashed", reason="SIGSEGV", outputs=[log]
            ),
        },
    )
    for key in ("cut", "died"):
        trace = run / "jobs" / key / "torch_compile" / "torch_trace"
        trace.mkdir(parents=True)
        (trace / "t.log").write_bytes(damaged["payload_cut"].read_bytes())
    jobs = {j.job: j for j in run_health(run).jobs}
    assert jobs["cut/torch_compile"].compile_status == "truncated"
    # A job that died mid-compile has a cut log by nature: its own end says more.
    assert jobs["died/torch_compile"].compile_status == "failed"
