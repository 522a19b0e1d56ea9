"""The per-job ``records`` analysis on hand-written worker phase logs."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from kerneltracer.analysis.base import AnalysisJob
from kerneltracer.analysis.records.job import RecordsAnalysis
from kerneltracer.analysis.registry import ANALYSES
from kerneltracer.core.layout import JobPaths

T0 = 1763790000123456789
OK_PHASES = f"""\
{T0} 4242 [torch_dispatch] [load] Start
{T0 + 2_000_000_000} 4242 [torch_dispatch] [load] End
{T0 + 2_000_100_000} 4242 [torch_dispatch] [warmup] Start
{T0 + 2_500_100_000} 4242 [torch_dispatch] [warmup] End
{T0 + 2_500_200_000} 4242 [torch_dispatch] [trace] Start
{T0 + 3_500_200_000} 4242 [torch_dispatch] [trace] End
{T0 + 3_500_300_000} 4242 [torch_dispatch] [write] Start
{T0 + 4_000_000_000} 4242 [torch_dispatch] [write] End
"""
# The worker was killed during trace: its Start has no End.
CRASHED_PHASES = "\n".join(OK_PHASES.splitlines()[:5]) + "\n"


def _job(tmp_path: Path, phases: str | None, status: str = "ok") -> AnalysisJob:
    job_dir = tmp_path / "jobs" / "tiny-llama" / "torch_dispatch"
    job_dir.mkdir(parents=True)
    JobPaths(job_dir).worker_log.write_text("loading model\n")
    if phases is not None:
        JobPaths(job_dir).phase_log.write_text(phases)
    return AnalysisJob(job_dir, "torch_dispatch", "tiny-llama", status, ("ops.jsonl",))


def _csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_registered() -> None:
    assert ANALYSES["records"] is RecordsAnalysis


@pytest.mark.parametrize("status", ["ok", "failed", "timeout", "crashed", "oom", "interrupted"])
def test_applies_whenever_the_phase_log_exists(tmp_path: Path, status: str) -> None:
    assert RecordsAnalysis().applies(_job(tmp_path / "with", OK_PHASES, status))
    assert not RecordsAnalysis().applies(_job(tmp_path / "without", None, status))


def test_phase_times_of_a_finished_job(tmp_path: Path) -> None:
    job = _job(tmp_path, OK_PHASES)
    before = _tree(job.job_dir)
    out = job.job_dir / "analysis" / "records"
    out.mkdir(parents=True)
    written = RecordsAnalysis().run(job, out)
    assert sorted(p.name for p in written) == [
        "phases_anomalies_0.csv", "phases_op_statistic_0.csv", "phases_summary_0.csv",
        "phases_tracing_0.json",
    ]  # fmt: skip
    assert all(p.parent == out for p in written)
    # Nothing outside its out_dir changed.
    after = {k: v for k, v in _tree(job.job_dir).items() if not k.startswith("analysis/")}
    assert after == before

    rows = {r["event"]: r for r in _csv(out / "phases_summary_0.csv")}
    assert list(rows) == ["load", "trace", "warmup", "write"]  # largest first
    assert rows["load"]["total(us)"] == "2000000.000"
    assert rows["trace"]["count"] == "1"
    # No standard event in a phase log: shares are of the worker's wall time (4 s).
    assert rows["load"]["w-percent"] == "0.500000"
    assert rows["warmup"]["w-percent"] == "0.125000"
    assert _csv(out / "phases_anomalies_0.csv") == []
    trace = json.loads((out / "phases_tracing_0.json").read_text())
    names = [e["name"] for e in trace["traceEvents"] if e["ph"] == "X"]
    assert names == [f"torch_dispatch@{p}" for p in ("load", "warmup", "trace", "write")]


def test_crashed_job_shows_the_open_phase(tmp_path: Path) -> None:
    job = _job(tmp_path, CRASHED_PHASES + "garbage after the kill\n", status="crashed")
    out = tmp_path / "out"
    written = RecordsAnalysis().run(job, out)
    assert out / "phases_bad_lines.csv" in written
    (bad,) = _csv(out / "phases_bad_lines.csv")
    assert bad["line"] == "6"
    (anomaly,) = _csv(out / "phases_anomalies_0.csv")
    assert (anomaly["kind"], anomaly["line"], anomaly["event"]) == ("unmatched_start", "5", "trace")
    trace = json.loads((out / "phases_tracing_0.json").read_text())
    (open_phase,) = [e for e in trace["traceEvents"] if e["ph"] == "i"]
    assert open_phase["name"] == "torch_dispatch@trace (no End)"
    assert [r["event"] for r in _csv(out / "phases_summary_0.csv")] == ["load", "warmup"]


def test_empty_phase_log_writes_nothing(tmp_path: Path) -> None:
    job = _job(tmp_path, "")
    assert RecordsAnalysis().run(job, tmp_path / "out") == []


def test_kerneltracer_analyze_runs_records_on_a_run_dir(tmp_path: Path) -> None:
    """End to end: `kerneltracer analyze RUN_DIR` on a failed job with a phase log."""
    from kerneltracer.core.status import JobStatus, TraceStatus, write_status

    job = _job(tmp_path, CRASHED_PHASES, status="failed")
    status = TraceStatus.model_validate({
        "status": JobStatus.FAILED, "job_key": "tiny-llama/torch_dispatch", "attempt": "a1",
        "request": {}, "request_hash": "h", "tracer": "torch_dispatch", "tracer_version": "1",
        "model": {"display": "tiny-llama", "slug": "tiny-llama"}, "framework": "huggingface",
        "device": "cpu", "mode": "eval", "dtype": "float32", "options_hash": "o",
    })  # fmt: skip
    write_status(job.job_dir, status)
    cmd = [sys.executable, "-m", "kerneltracer.cli.main", "analyze", str(tmp_path)]
    proc = subprocess.run([*cmd, "--only", "records"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = job.job_dir / "analysis" / "records"
    rows = _csv(out / "phases_summary_0.csv")
    assert [r["event"] for r in rows] == ["load", "warmup"]
    assert _csv(out / "phases_anomalies_0.csv")[0]["event"] == "trace"


def test_phase_log_written_by_the_worker_phase_logger(tmp_path: Path) -> None:
    """The worker's own PhaseLog writes what this analysis reads (nested phases, failure)."""
    from kerneltracer.worker.phases import PhaseLog

    job = _job(tmp_path, None, status="failed")
    phases = PhaseLog(JobPaths(job.job_dir).phase_log, node="torch_dispatch")
    with phases.phase("load"):
        pass
    with pytest.raises(RuntimeError), phases.phase("trace"), phases.phase("warmup"):
        raise RuntimeError("boom")
    out = tmp_path / "out"
    RecordsAnalysis().run(job, out)
    assert not (out / "phases_bad_lines.csv").exists()
    assert _csv(out / "phases_anomalies_0.csv") == []
    ops = _csv(out / "phases_op_statistic_0.csv")
    assert [(r["node"], r["event"]) for r in ops] == [
        ("torch_dispatch", "load"), ("torch_dispatch", "trace"), ("torch_dispatch", "warmup"),
    ]  # fmt: skip
    assert {r["event"] for r in _csv(out / "phases_summary_0.csv")} == {"load", "trace", "warmup"}
