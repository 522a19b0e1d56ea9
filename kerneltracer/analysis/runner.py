"""Run every applicable per-job analysis over a run dir, skipping unchanged ones.

Each analysis writes into ``JOB_DIR/analysis/<name>/`` and a marker ``_ANALYSIS.json``
recording the analysis version and the job status it read; a rerun skips it while both
are unchanged. Failures of one analysis are recorded and do not stop the others.
"""

from __future__ import annotations

import shutil
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from kerneltracer.analysis.base import AnalysisJob, JobAnalysis
from kerneltracer.jobs import JOBS_DIR, STATUS_FILE
from kerneltracer.jsonio import atomic_write_json, read_json, sha256_file
from kerneltracer.status import read_status

MARKER = "_ANALYSIS.json"


@dataclass(frozen=True)
class AnalysisOutcome:
    job_key: str
    analysis: str
    state: str  # done, unchanged, failed
    detail: str = ""


def iter_jobs(run_dir: Path) -> list[tuple[str, AnalysisJob]]:
    jobs = []
    root = run_dir / JOBS_DIR
    for status_path in sorted(root.glob(f"*/*/{STATUS_FILE}")):
        st = read_status(status_path.parent)
        if st is None:
            continue
        key = str(status_path.parent.relative_to(root))
        jobs.append(
            (
                key,
                AnalysisJob(
                    job_dir=status_path.parent,
                    tracer=st.tracer,
                    model=str(st.model.get("display", "")),
                    status=st.status.value,
                    outputs=tuple(o.path for o in st.outputs),
                ),
            )
        )
    return jobs


def analyze_run(
    run_dir: Path,
    analyses: Mapping[str, type[JobAnalysis]],
    force: bool = False,
    on_outcome: Callable[[AnalysisOutcome], None] | None = None,
) -> list[AnalysisOutcome]:
    outcomes = []
    for key, job in iter_jobs(run_dir):
        status_sha = sha256_file(job.job_dir / STATUS_FILE)
        for name, cls in analyses.items():
            analysis = cls()
            if not analysis.applies(job):
                continue
            outcome = _run_one(key, job, name, analysis, status_sha, force)
            outcomes.append(outcome)
            if on_outcome is not None:
                on_outcome(outcome)
    return outcomes


def _run_one(
    key: str, job: AnalysisJob, name: str, analysis: JobAnalysis, status_sha: str, force: bool
) -> AnalysisOutcome:
    out_dir = job.job_dir / "analysis" / name
    stamp = {"analysis": name, "version": analysis.version, "status_sha256": status_sha}
    if not force:
        try:
            previous = read_json(out_dir / MARKER)
            if {k: previous.get(k) for k in stamp} == stamp and previous.get("state") == "done":
                return AnalysisOutcome(key, name, "unchanged")
        except (OSError, ValueError, AttributeError):
            pass
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    try:
        files = analysis.run(job, out_dir)
    except Exception as exc:
        detail = f"{type(exc).__name__}: {exc}"
        atomic_write_json(
            out_dir / MARKER,
            {**stamp, "state": "failed", "error": detail, "traceback": traceback.format_exc()},
        )
        return AnalysisOutcome(key, name, "failed", detail)
    rel = [str(Path(f).relative_to(out_dir)) if Path(f).is_absolute() else str(f) for f in files]
    atomic_write_json(out_dir / MARKER, {**stamp, "state": "done", "files": rel})
    return AnalysisOutcome(key, name, "done", f"{len(rel)} file(s)")
