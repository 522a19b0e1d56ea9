"""Compile health of a whole run (or of a set of logs): one row per compile job, then
the fleet's answers — pass rate, the breaks that hit the most models, the commonest
recompile reasons, and how compile time is spread.

Jobs are chosen by what they wrote, never by tracer: any job with a TORCH_TRACE log
(listed with that kind, or, for a job that did not end ok, found under ``torch_trace/``).
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kerneltracer.analysis.compile_health.health import (
    FAILED,
    NO_LOG,
    NOT_RUN,
    OK,
    PARTIAL,
    STATES,
    UNTRUSTED,
    BreakRow,
    JobHealth,
    job_health,
)
from kerneltracer.analysis.compile_health.records import PHASES, TextBudget
from kerneltracer.analysis.compile_health.sources import LogHealth, SourceProblem, read_sources
from kerneltracer.core.artefacts import TORCH_TRACE_DIR, ArtefactKind, kind_from_name
from kerneltracer.core.layout import JobPaths
from kerneltracer.errors import InputFileError

if TYPE_CHECKING:
    # pydantic (~0.1 s): only a run dir's jobs have a JOB.json to validate.
    from kerneltracer.core.jobspec import JobSpec

TOP_N = 20


@dataclass
class TopBreak:
    key: str
    gb_id: str | None
    gb_type: str
    models: int
    occurrences: int
    example_model: str
    example_frame: str | None
    example_code: str | None


@dataclass
class FleetHealth:
    source: str
    jobs: list[JobHealth] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    texts_not_kept: int = 0  # graph / guard / code texts past the read's TextBudget

    def summary(self) -> dict[str, Any]:
        jobs = self.jobs
        by_status = Counter(j.compile_status for j in jobs)
        # A log that cannot be trusted says nothing about passing, nor about time.
        considered = [j for j in jobs if j.compile_status not in (NO_LOG, NOT_RUN, *UNTRUSTED)]
        timed = [j for j in jobs if j.compile_status not in UNTRUSTED]
        # Partial (a frame failed and ran eagerly) is no pass: that function runs uncompiled.
        outcomes = {
            "pass": sum(1 for j in considered if j.compile_status == OK),
            "partial": sum(1 for j in considered if j.compile_status == PARTIAL),
            "fail": sum(1 for j in considered if j.compile_status == FAILED),
        }
        times = sorted(j.times.get("total", 0.0) for j in considered)
        return {
            "source": self.source,
            "jobs": len(jobs),
            "status_counts": {s: by_status.get(s, 0) for s in STATES},
            "outcome_counts": outcomes,
            **{
                f"{k}_rate": round(n / len(considered), 4) if considered else None
                for k, n in outcomes.items()
            },
            "untrusted": [
                {"job": j.job, "status": j.compile_status, "reason": j.fail_reason}
                for j in jobs
                if j.compile_status in UNTRUSTED
            ],
            "models_with_breaks": sum(1 for j in jobs if j.breaks),
            "models_recompiling": sum(1 for j in jobs if j.recompiles),
            "compile_time_s": _distribution(times),
            "phase_time_s": {p: round(sum(j.times.get(p, 0.0) for j in timed), 6) for p in PHASES},
            "dynamo_before_restart_s": round(
                sum(j.times.get("dynamo_before_restart", 0.0) for j in timed), 6
            ),
            "fail_types": dict(Counter(j.fail_type for j in jobs if j.fail_type).most_common()),
            "top_breaks": [vars(b) for b in self.top_breaks()],
            "top_recompile_reasons": self.top_recompiles(),
            "problems": self.problems,
            "texts_not_kept": self.texts_not_kept,
        }

    def top_breaks(self, n: int = TOP_N) -> list[TopBreak]:
        """Break keys ranked by the number of models they hit, then by occurrences."""
        groups: dict[str, list[tuple[JobHealth, BreakRow]]] = {}
        for j in self.jobs:
            for b in j.breaks:
                groups.setdefault(b.key, []).append((j, b))
        tops = []
        for key, hits in groups.items():
            j0, b0 = hits[0]
            tops.append(
                TopBreak(
                    key,
                    b0.gb_id,
                    b0.gb_type,
                    len({j.model for j, _ in hits}),
                    sum(b.occurrences for _, b in hits),
                    j0.model,
                    b0.frame,
                    b0.code,
                )
            )
        tops.sort(key=lambda t: (-t.models, -t.occurrences, t.key))
        return tops[:n]

    def top_recompiles(self, n: int = TOP_N) -> list[dict[str, Any]]:
        groups: dict[str, list[Any]] = {}
        for j in self.jobs:
            for r in j.recompiles:
                groups.setdefault(r.reason_key, []).append(r)
        rows = [
            {
                "reason": key,
                "models": len({r.model for r in rs}),
                "recompiles": len(rs),
                "example_model": rs[0].model,
                "example": rs[0].reason,
                "example_frame": rs[0].frame,
                # "one shape change → 6 recompiles": how many are resume functions, and
                # the breaks that split the function into them.
                "resume_functions": sum(1 for r in rs if r.resumes_after_line is not None),
                "after_breaks": sorted({k for r in rs for k in r.after_breaks}),
            }
            for key, rs in groups.items()
        ]
        rows.sort(key=lambda r: (-r["models"], -r["recompiles"], r["reason"]))
        return rows[:n]


def _distribution(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"total": 0.0, "min": None, "median": None, "p90": None, "max": None}
    p90 = values[min(len(values) - 1, round(0.9 * (len(values) - 1)))]
    return {
        "total": round(sum(values), 6),
        "min": round(values[0], 6),
        "median": round(statistics.median(values), 6),
        "p90": round(p90, 6),
        "max": round(values[-1], 6),
    }


def run_health(run_dir: Path) -> FleetHealth:
    """Compile health of every job of a run dir that has a TORCH_TRACE log, or whose
    tracer declares one (a compile job that ended before it compiled anything)."""
    from kerneltracer.coverage.scan import InputProblem, iter_job_refs
    from kerneltracer.tracers.registry import tracers_writing

    compilers = tracers_writing([ArtefactKind.TORCH_TRACE_LOG])
    fleet = FleetHealth(str(run_dir))
    budget = TextBudget()
    for ref in iter_job_refs(run_dir):
        if isinstance(ref, InputProblem):
            continue  # no status: nothing says it is a compile job
        logs = _job_logs(ref.job_dir, ref.artefact_names(ArtefactKind.TORCH_TRACE_LOG), ref.status)
        if logs is None and ref.tracer not in compilers:
            continue
        found, problems = _read_all(logs or [], budget)
        spec = _job_spec(ref.job_dir)
        mode = ref.model.rsplit(" [", 1)[1].rstrip("]") if ref.model.endswith("]") else "eval"
        health = job_health(
            ref.model,
            ref.key,
            found,
            problems,
            job_status=ref.status,
            job_reason=ref.reason,
            mode=mode,
            weights=ref.weights,
            options=_options(spec),
            model_dir=_model_dir(spec),
        )
        fleet.jobs.append(health)
        fleet.problems += [f"{ref.key}: {p}" for p in health.problems]
    fleet.texts_not_kept = budget.dropped
    return fleet


def logs_health(paths: Iterable[Path]) -> FleetHealth:
    """Compile health of logs a user hands over: each path (a log, a directory of logs,
    an intermediate) is one row, named by its path."""
    paths = list(paths)
    fleet = FleetHealth(", ".join(str(p) for p in paths))
    budget = TextBudget()
    for path in paths:
        found, problems = read_sources(Path(path), budget)
        health = job_health(str(path), str(path), found, problems)
        fleet.jobs.append(health)
        fleet.problems += health.problems
    fleet.texts_not_kept = budget.dropped
    return fleet


def _job_logs(job_dir: Path, listed: list[str], status: str) -> list[Path] | None:
    """The job's TORCH_TRACE logs; None when it is no compile job. A job that did not end
    ok lists no outputs, so its logs are looked for where the convention puts them."""
    if listed:
        return [job_dir / p for p in listed if ".." not in Path(p).parts]
    if status == "ok":
        return None
    trace_dir = job_dir / TORCH_TRACE_DIR
    try:
        found = sorted(
            p
            for p in trace_dir.iterdir()
            if p.is_file()
            and kind_from_name(f"{TORCH_TRACE_DIR}/{p.name}") is ArtefactKind.TORCH_TRACE_LOG
        )
    except OSError:
        return None
    return found if trace_dir.is_dir() else None


def _read_all(logs: list[Path], budget: TextBudget) -> tuple[list[LogHealth], list[SourceProblem]]:
    found: list[LogHealth] = []
    problems: list[SourceProblem] = []
    for log in logs:
        if log.stat().st_size == 0 if log.is_file() else False:
            continue  # torch opens a log per process, even one that compiles nothing
        got, bad = read_sources(log, budget)
        found += got
        problems += bad
    return found, problems


def _job_spec(job_dir: Path) -> JobSpec | None:
    """The job's spec from its JOB.json; None when it cannot be read."""
    from kerneltracer.core.jobspec import JobFile

    try:
        return JobFile.read(JobPaths(job_dir).job_file).job
    except InputFileError:
        return None


def _options(spec: JobSpec | None) -> dict[str, Any]:
    """The tracer options the job ran with, for the table and the diff."""
    return dict(spec.options) if spec is not None else {}


def _model_dir(spec: JobSpec | None) -> Path | None:
    """The user's model directory (``path:`` models), else where the worker loaded from."""
    where = spec.model.path or spec.model.local_dir if spec is not None else None
    return Path(where) if where else None
