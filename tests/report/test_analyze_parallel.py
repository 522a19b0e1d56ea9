"""`kerneltracer analyze --jobs N`: jobs analysed in worker processes, records kept."""

from __future__ import annotations

import os
from pathlib import Path

from kerneltracer.analysis.base import AnalysisJob, JobAnalysis
from kerneltracer.analysis.runner import AnalysisOutcome, analyze_run
from kerneltracer.core.analysis_record import (
    AnalysisRecord,
    AnalysisState,
    read_analysis_record,
)
from kerneltracer.core.layout import JobPaths
from tests.helpers import kt
from tests.report.runs import make_run, status

PHASES = "".join(
    f"{1000 + 10 * i + j} 7 [torch_dispatch] [{p}] {e}\n"
    for i, p in enumerate(("load", "warmup", "trace", "write"))
    for j, e in enumerate(("Start", "End"))
)


class PidAnalysis(JobAnalysis):
    """Records which process analysed the job (module level: worker processes need it)."""

    name = "pid"

    def applies(self, job: AnalysisJob) -> bool:
        return job.status == "ok"

    def run(self, job: AnalysisJob, out_dir: Path) -> list[Path]:
        path = out_dir / "sub" / "pid.txt"
        path.parent.mkdir()
        path.write_text(str(os.getpid()))
        return [path]


class BrokenAnalysis(JobAnalysis):
    name = "broken"

    def applies(self, job: AnalysisJob) -> bool:
        return job.model == "m1"

    def run(self, job: AnalysisJob, out_dir: Path) -> list[Path]:
        raise ValueError("cannot read this trace")


def _run(tmp_path: Path, n: int = 4) -> Path:
    keys = [f"m{i}/torch_dispatch" for i in range(n)]
    run = make_run(tmp_path / "run", {k: status(k, k.split("/")[0]) for k in keys})
    for key in keys:
        (run / "jobs" / key / "phases.log").write_text(PHASES)
    return run


def test_jobs_run_in_worker_processes_and_outcomes_stream(tmp_path: Path) -> None:
    run = _run(tmp_path)
    seen: list[AnalysisOutcome] = []
    analyses = {"pid": PidAnalysis, "broken": BrokenAnalysis}
    outcomes = analyze_run(run, analyses, on_outcome=seen.append, workers=2)
    assert seen == outcomes and len(outcomes) == 5
    states = {(o.job_key, o.analysis): o.state for o in outcomes}
    assert states.pop(("m1/torch_dispatch", "broken")) == "failed"
    assert set(states.values()) == {"done"}
    pids = {int(p.read_text()) for p in run.glob("jobs/*/*/analysis/pid/sub/pid.txt")}
    assert len(pids) >= 1 and os.getpid() not in pids
    marker = read_analysis_record(JobPaths(run / "jobs/m0/torch_dispatch").analysis("pid"))
    assert isinstance(marker, AnalysisRecord)
    assert marker.files == ["sub/pid.txt"]  # relative to the analysis dir, not the cwd
    again = analyze_run(run, analyses, workers=2)
    assert {o.state for o in again if o.analysis == "pid"} == {"unchanged"}
    assert [o.state for o in again if o.analysis == "broken"] == ["failed"]  # failures retry
    forced = analyze_run(run, {"pid": PidAnalysis}, force=True, workers=2)
    assert [o.state for o in forced] == ["done"] * 4


def test_one_job_or_one_worker_uses_one_worker_process(tmp_path: Path) -> None:
    """Serial analysis still runs isolated, in one reused worker process (not the caller)."""
    run = _run(tmp_path, n=1)
    analyze_run(run, {"pid": PidAnalysis}, workers=4)
    run2 = _run(tmp_path / "b", n=3)
    analyze_run(run2, {"pid": PidAnalysis}, workers=1)
    # Auto mode: too little input to repay the start-up of more worker processes.
    run3 = _run(tmp_path / "c", n=3)
    analyze_run(run3, {"pid": PidAnalysis}, workers=4, min_parallel_bytes=1 << 30)
    for r, jobs in ((run, 1), (run2, 3), (run3, 3)):
        pids = [int(p.read_text()) for p in r.glob("jobs/*/*/analysis/pid/*/*")]
        assert len(pids) == jobs and len(set(pids)) == 1 and os.getpid() not in pids


def test_cli_jobs_option(tmp_path: Path) -> None:
    run = _run(tmp_path, n=3)
    proc = kt("analyze", str(run), "--jobs", "2", "--only", "records")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("done ") == 3 and "3 analysis run(s), 0 failed" in proc.stdout
    for i in range(3):
        paths = JobPaths(run / f"jobs/m{i}/torch_dispatch").analysis("records")
        marker = read_analysis_record(paths)
        assert isinstance(marker, AnalysisRecord) and marker.state is AnalysisState.DONE
        assert all((paths.dir / f).is_file() for f in marker.files)
    bad = kt("analyze", str(run), "--jobs", "-1")
    assert bad.returncode == 2 and "-1" in bad.stderr
