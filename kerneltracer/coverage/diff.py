"""Compare two runs: per model, status changes, ops added/removed, call-count and time changes.

Op tables are compared only where the job is ok and readable in both runs: a tracer that
failed in RUN_B shows up once, as a status change, not as "every op removed". Self-time
changes below both the relative and the absolute threshold are noise and are not reported.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from kerneltracer.coverage.diff_schema import (
    CountChange,
    DiffReport,
    DiffSummary,
    ModelDiff,
    Problem,
    SourceOp,
    StatusChange,
    Thresholds,
    TimeChange,
)
from kerneltracer.coverage.matrix import Coverage, OpUse, coverage_from_refs
from kerneltracer.coverage.scan import InputProblem, JobRef, iter_job_refs
from kerneltracer.errors import UsageError

_DEFAULT_MIN_TIME_CHANGE = 0.10
_DEFAULT_MIN_TIME_US = 10.0

_Jobs = dict[str, dict[str, JobRef]]  # model -> tracer -> job
_Tables = dict[tuple[str, str], dict[str, OpUse]]  # (model, source) -> op -> use


class _Side:
    """One run, scanned once: its jobs by model and tracer, its coverage, its problems."""

    def __init__(self, run_dir: Path, name: Literal["a", "b"]) -> None:
        refs: list[JobRef | InputProblem] = list(iter_job_refs(run_dir))
        self.jobs: _Jobs = {}
        for ref in refs:
            if isinstance(ref, JobRef):
                self.jobs.setdefault(ref.model, {})[ref.tracer] = ref
        self.coverage: Coverage = coverage_from_refs(refs)
        self.tables: _Tables = self.coverage.by_job()
        self.gpu_attributed = set(self.coverage.gpu_attributed)
        scan_problems = [r for r in refs if isinstance(r, InputProblem)]
        # A problem can come from the scan and from the coverage; each is listed once.
        unique = dict.fromkeys([*scan_problems, *self.coverage.problems])
        self.problems = [
            Problem(run=name, job_key=p.job_key, path=p.path, reason=p.reason) for p in unique
        ]


def diff_runs(
    run_a: Path,
    run_b: Path,
    min_time_change: float = _DEFAULT_MIN_TIME_CHANGE,
    min_time_us: float = _DEFAULT_MIN_TIME_US,
) -> DiffReport:
    if min_time_change < 0 or min_time_us < 0:
        raise UsageError("time-change thresholds must not be negative")
    a, b = _Side(run_a, "a"), _Side(run_b, "b")
    thresholds = Thresholds(min_time_change=min_time_change, min_time_us=min_time_us)
    common = sorted(set(a.jobs) & set(b.jobs))
    models = [m for m in (_model_diff(m, a, b, thresholds) for m in common) if m is not None]
    only_a = sorted(set(a.jobs) - set(b.jobs))
    only_b = sorted(set(b.jobs) - set(a.jobs))
    problems = a.problems + b.problems
    return DiffReport(
        run_a=str(run_a),
        run_b=str(run_b),
        thresholds=thresholds,
        models_only_in_a=only_a,
        models_only_in_b=only_b,
        models=models,
        problems=problems,
        summary=_summary(len(common), models, only_a, only_b, len(problems)),
    )


def _model_diff(model: str, a: _Side, b: _Side, th: Thresholds) -> ModelDiff | None:
    statuses = _status_changes(a.jobs[model], b.jobs[model])
    added: list[SourceOp] = []
    removed: list[SourceOp] = []
    counts: list[CountChange] = []
    times: list[TimeChange] = []
    for source in sorted(a.jobs[model]):  # a source is named by its job's tracer
        before, after = a.tables.get((model, source)), b.tables.get((model, source))
        if before is None or after is None:
            continue  # not ok or unreadable on one side: the status change or problem says so
        added += [SourceOp(source=source, op=op) for op in sorted(after.keys() - before.keys())]
        removed += [SourceOp(source=source, op=op) for op in sorted(before.keys() - after.keys())]
        # Attributed GPU time in one run and profiler self time in the other do not compare.
        gpu = (model, source) in a.gpu_attributed
        same_time = gpu == ((model, source) in b.gpu_attributed)
        for op in sorted(before.keys() & after.keys()):
            old, new = before[op], after[op]
            if (old.calls, old.signatures) != (new.calls, new.signatures):
                counts.append(_count_change(old, new))
            change = _time_change(old, new, th, gpu) if same_time else None
            if change is not None:
                times.append(change)
    if not (statuses or added or removed or counts or times):
        return None
    return ModelDiff(
        model=model,
        status_changes=statuses,
        ops_added=added,
        ops_removed=removed,
        count_changes=counts,
        time_changes=times,
    )


def _status_changes(before: dict[str, JobRef], after: dict[str, JobRef]) -> list[StatusChange]:
    changes = []
    for tracer in sorted(before.keys() | after.keys()):
        old, new = before.get(tracer), after.get(tracer)
        old_status = old.status if old else None
        new_status = new.status if new else None
        if old_status != new_status:
            changes.append(
                StatusChange(
                    tracer=tracer,
                    before=old_status,
                    after=new_status,
                    reason_before=old.reason if old else None,
                    reason_after=new.reason if new else None,
                )
            )
    return changes


def _count_change(old: OpUse, new: OpUse) -> CountChange:
    return CountChange(
        source=old.source,
        op=old.op,
        calls_before=old.calls,
        calls_after=new.calls,
        signatures_before=old.signatures,
        signatures_after=new.signatures,
    )


def _time_change(old: OpUse, new: OpUse, th: Thresholds, gpu: bool) -> TimeChange | None:
    if old.self_time_us is None or new.self_time_us is None:
        return None
    delta = new.self_time_us - old.self_time_us
    if delta == 0 or abs(delta) < th.min_time_us:
        return None
    relative = delta / old.self_time_us if old.self_time_us > 0 else None
    if relative is not None and abs(relative) < th.min_time_change:
        return None
    return TimeChange(
        source=old.source,
        op=old.op,
        self_time_us_before=old.self_time_us,
        self_time_us_after=new.self_time_us,
        change=relative,
        gpu_time=gpu,
    )


def _summary(
    compared: int, models: Iterable[ModelDiff], only_a: list[str], only_b: list[str], problems: int
) -> DiffSummary:
    models = list(models)
    return DiffSummary(
        models_compared=compared,
        models_changed=len(models),
        models_only_in_a=len(only_a),
        models_only_in_b=len(only_b),
        status_changes=sum(len(m.status_changes) for m in models),
        ops_added=sum(len(m.ops_added) for m in models),
        ops_removed=sum(len(m.ops_removed) for m in models),
        count_changes=sum(len(m.count_changes) for m in models),
        time_changes=sum(len(m.time_changes) for m in models),
        problems=problems,
    )
