"""The compile level of ``kerneltracer diff``: per compile job, what changed between two
runs — status, graphs, breaks (added / removed, aligned by code location), recompiles,
guards, kernels, per-phase time — with a relative threshold under which time is noise.

Jobs are matched by job key (model and column). A frame is aligned by where it is in the
code, not by its absolute path: two runs from different venvs or machines put the same
``transformers/models/llama/modeling_llama.py:120`` under different roots.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from kerneltracer.analysis.compile_health.fleet import FleetHealth
from kerneltracer.analysis.compile_health.health import COUNT_COLUMNS, JobHealth
from kerneltracer.analysis.compile_health.records import PHASES

_DEFAULT_TIME_THRESHOLD = 0.05
# Phases under this many seconds in both runs are not compared (0 → 0.0004 s is +inf%).
_MIN_PHASE_S = 0.001
# Counts that describe the log rather than the compile: not a change of the model.
_NOT_COMPARED = frozenset({"logs", "compile_ids"})
_COMPARED_COUNTS = tuple(c for c in COUNT_COLUMNS if c not in _NOT_COMPARED)
_ROOT_MARKERS = ("site-packages/", "dist-packages/")


@dataclass
class FieldChange:
    field: str
    before: Any
    after: Any


@dataclass
class JobDiff:
    model: str
    job: str
    status: FieldChange | None = None
    counts: list[FieldChange] = field(default_factory=list)
    times: list[FieldChange] = field(default_factory=list)
    breaks_added: list[dict[str, Any]] = field(default_factory=list)
    breaks_removed: list[dict[str, Any]] = field(default_factory=list)
    recompile_reasons_added: list[str] = field(default_factory=list)
    recompile_reasons_removed: list[str] = field(default_factory=list)
    options: list[FieldChange] = field(default_factory=list)  # context: why it may differ

    @property
    def changed(self) -> bool:
        return bool(
            self.status
            or self.counts
            or self.times
            or self.breaks_added
            or self.breaks_removed
            or self.recompile_reasons_added
            or self.recompile_reasons_removed
        )

    def changed_fields(self) -> list[str]:
        names = ["compile_status"] if self.status else []
        names += [c.field for c in self.counts] + [t.field for t in self.times]
        if self.breaks_added or self.breaks_removed:
            names.append("breaks")
        if self.recompile_reasons_added or self.recompile_reasons_removed:
            names.append("recompile_reasons")
        return names


@dataclass
class CompileDiff:
    threshold: float
    jobs_compared: int = 0
    only_in_a: list[str] = field(default_factory=list)
    only_in_b: list[str] = field(default_factory=list)
    jobs: list[JobDiff] = field(default_factory=list)  # changed ones only

    @property
    def has_changes(self) -> bool:
        return bool(self.jobs or self.only_in_a or self.only_in_b)

    def as_json(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold,
            "jobs_compared": self.jobs_compared,
            "jobs_changed": len(self.jobs),
            "only_in_a": self.only_in_a,
            "only_in_b": self.only_in_b,
            "jobs": [{**asdict(j), "changed_fields": j.changed_fields()} for j in self.jobs],
        }


def diff_fleets(
    a: FleetHealth, b: FleetHealth, *, threshold: float = _DEFAULT_TIME_THRESHOLD
) -> CompileDiff:
    left = {j.job: j for j in a.jobs}
    right = {j.job: j for j in b.jobs}
    out = CompileDiff(threshold)
    out.only_in_a = sorted(set(left) - set(right))
    out.only_in_b = sorted(set(right) - set(left))
    for key in [k for k in left if k in right]:
        out.jobs_compared += 1
        d = _diff_jobs(left[key], right[key], threshold)
        if d.changed:
            out.jobs.append(d)
    return out


def _diff_jobs(a: JobHealth, b: JobHealth, threshold: float) -> JobDiff:
    d = JobDiff(b.model, b.job)
    if (a.compile_status, a.fail_type) != (b.compile_status, b.fail_type):
        d.status = FieldChange(
            "compile_status",
            _status_text(a.compile_status, a.fail_type),
            _status_text(b.compile_status, b.fail_type),
        )
    d.counts = [
        FieldChange(c, a.counts.get(c, 0), b.counts.get(c, 0))
        for c in _COMPARED_COUNTS
        if a.counts.get(c, 0) != b.counts.get(c, 0)
    ]
    d.times = _time_changes(a.times, b.times, threshold)
    before, after = _break_index(a), _break_index(b)
    d.breaks_added = [after[k] for k in after if k not in before]
    d.breaks_removed = [before[k] for k in before if k not in after]
    ra = {r.reason_key for r in a.recompiles}
    rb = {r.reason_key for r in b.recompiles}
    d.recompile_reasons_added = sorted(rb - ra)
    d.recompile_reasons_removed = sorted(ra - rb)
    keys = sorted(set(a.options) | set(b.options))
    d.options = [
        FieldChange(k, a.options.get(k), b.options.get(k))
        for k in keys
        if a.options.get(k) != b.options.get(k)
    ]
    return d


def _status_text(status: str, fail_type: str | None) -> str:
    return f"{status} ({fail_type})" if fail_type else status


def _time_changes(a: dict[str, float], b: dict[str, float], threshold: float) -> list[FieldChange]:
    out = []
    for phase in ("total", *PHASES):
        x, y = a.get(phase, 0.0), b.get(phase, 0.0)
        if max(x, y) < _MIN_PHASE_S:
            continue
        base = max(x, _MIN_PHASE_S)
        if abs(y - x) / base > threshold:
            name = "compile_time_s" if phase == "total" else f"{phase}_s"
            out.append(FieldChange(name, round(x, 6), round(y, 6)))
    return out


def code_location(frame: str | None) -> str | None:
    """``file:line`` relative to the package root (``transformers/models/…py:120``), or the
    file's name when it is not under one: the same line of code in either run."""
    if not frame:
        return None
    path, _, line = frame.rpartition(":")
    norm = path.replace("\\", "/")
    for marker in _ROOT_MARKERS:
        if marker in norm:
            return f"{norm.rsplit(marker, 1)[1]}:{line}"
    return f"{norm.rsplit('/', 1)[-1]}:{line}"


def _break_index(j: JobHealth) -> dict[tuple[str, str | None], dict[str, Any]]:
    return {
        (b.key, code_location(b.frame)): {
            "key": b.key,
            "gb_id": b.gb_id,
            "gb_type": b.gb_type,
            "location": code_location(b.frame),
            "code": b.code,
        }
        for b in j.breaks
    }


def summary_lines(diff: CompileDiff) -> list[str]:
    """Console lines: one per changed job, naming its changed fields."""
    lines = [f"compile: only in A: {k}" for k in diff.only_in_a]
    lines += [f"compile: only in B: {k}" for k in diff.only_in_b]
    for j in diff.jobs:
        parts = []
        if j.status:
            parts.append(f"status {j.status.before} -> {j.status.after}")
        parts += [f"{c.field} {c.before} -> {c.after}" for c in j.counts + j.times]
        parts += [f"+break {x['gb_id'] or x['key']} at {x['location']}" for x in j.breaks_added]
        parts += [f"-break {x['gb_id'] or x['key']} at {x['location']}" for x in j.breaks_removed]
        parts += [f"+recompile {r}" for r in j.recompile_reasons_added]
        parts += [f"-recompile {r}" for r in j.recompile_reasons_removed]
        opts = ", ".join(f"{o.field}: {o.before} -> {o.after}" for o in j.options)
        lines.append(
            f"compile {j.model}: " + "; ".join(parts) + (f" (options {opts})" if opts else "")
        )
    return lines
