"""Cross-model operator coverage: which ops each model runs, how often, and where time goes.

:func:`build_coverage` reads every *ok* job of a coverage source (torch_dispatch,
torch_profiler, vllm_profiler) once, one job at a time, and keeps only the per-op
aggregates (a few hundred rows per job), so a run of 500 models stays small in memory.
Inputs that cannot be read are collected as :class:`InputProblem` rather than raised.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from kerneltracer.coverage.scan import InputProblem, JobRef, iter_job_refs
from kerneltracer.coverage.sources import PROFILED_SOURCES, READERS, SourceError
from kerneltracer.jobs import JOBS_DIR

DEFAULT_SOURCE = "torch_dispatch"


@dataclass(frozen=True, slots=True)
class OpUse:
    """One (op, model, source) cell."""

    op: str  # "aten.mm.default" (torch_dispatch), "aten::mm" (profiler) or a kernel name
    model: str  # the model's display id (plus " [mode]" for non-eval modes)
    source: str  # the tracer the numbers come from
    calls: int
    signatures: int | None  # distinct input signatures (torch_dispatch only), else None
    self_time_us: float | None  # total self time where a profile exists, else None


@dataclass(frozen=True, slots=True)
class BadRows:
    """Rows of one input that were skipped as malformed, counted by kind."""

    job_key: str
    path: str  # relative to the run dir
    counts: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.counts.values())


@dataclass(frozen=True)
class Coverage:
    models: tuple[str, ...]  # sorted: every model with an ok job of a coverage source
    uses: tuple[OpUse, ...]
    # (model, source) of every ok job whose input was read, sorted
    jobs_read: tuple[tuple[str, str], ...] = ()
    # (model, source, status) of coverage-source jobs left out because they are not ok
    not_ok: tuple[tuple[str, str, str], ...] = ()
    problems: tuple[InputProblem, ...] = ()  # inputs that could not be read
    bad_rows: tuple[BadRows, ...] = ()  # inputs read, minus the rows counted here
    _index: dict[str, dict[str, dict[str, OpUse]]] = field(
        init=False, repr=False, compare=False, hash=False, default_factory=dict
    )

    def __post_init__(self) -> None:
        for use in self.uses:
            self._index.setdefault(use.source, {}).setdefault(use.op, {})[use.model] = use

    def sources(self) -> list[str]:
        return sorted({s for _, s in self.jobs_read} | set(self._index))

    def models_for(self, source: str = DEFAULT_SOURCE) -> list[str]:
        """Models whose job of ``source`` was read (possibly with no ops at all)."""
        return [m for m, s in self.jobs_read if s == source]

    def ops(self, source: str = DEFAULT_SOURCE) -> list[str]:
        return sorted(self._index.get(source, {}))

    def matrix(self, source: str = DEFAULT_SOURCE) -> dict[str, dict[str, int]]:
        """op -> model -> calls; a model that does not run the op has no entry."""
        by_op = self._index.get(source, {})
        return {op: {m: u.calls for m, u in sorted(by_op[op].items())} for op in sorted(by_op)}

    def signatures(self, source: str = DEFAULT_SOURCE) -> dict[str, dict[str, int]]:
        """op -> model -> distinct input signatures (torch_dispatch records them)."""
        by_op = self._index.get(source, {})
        return {
            op: {m: u.signatures for m, u in sorted(by_op[op].items()) if u.signatures is not None}
            for op in sorted(by_op)
        }

    def unique_ops(self, source: str = DEFAULT_SOURCE) -> dict[str, list[str]]:
        """model -> the ops no other model runs (every model read for ``source`` is a key)."""
        unique: dict[str, list[str]] = {m: [] for m in self.models_for(source)}
        for op, by_model in sorted(self._index.get(source, {}).items()):
            if len(by_model) == 1:
                unique.setdefault(next(iter(by_model)), []).append(op)
        return unique

    def top_ops_by_time(self, n: int = 20, source: str | None = None) -> list[tuple[str, float]]:
        """The ops with the most self time summed over models, from the profiled sources."""
        totals: dict[str, float] = defaultdict(float)
        for src in PROFILED_SOURCES if source is None else (source,):
            for op, by_model in self._index.get(src, {}).items():
                for use in by_model.values():
                    if use.self_time_us is not None:
                        totals[op] += use.self_time_us
        ranked = sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))
        return ranked[: max(n, 0)]

    def use(self, op: str, model: str, source: str = DEFAULT_SOURCE) -> OpUse | None:
        return self._index.get(source, {}).get(op, {}).get(model)

    def by_job(self) -> dict[tuple[str, str], dict[str, OpUse]]:
        """(model, source) -> op -> use, for every job read (empty dict for a job with no ops)."""
        grouped: dict[tuple[str, str], dict[str, OpUse]] = {job: {} for job in self.jobs_read}
        for use in self.uses:
            grouped.setdefault((use.model, use.source), {})[use.op] = use
        return grouped


def _tracer_of_dir(job_key: str) -> str:
    return job_key.rsplit("/", 1)[-1].split(".", 1)[0]


def build_coverage(run_dir: Path) -> Coverage:
    """Read every ok coverage-source job of ``run_dir`` into a :class:`Coverage`."""
    return coverage_from_refs(iter_job_refs(run_dir))


def coverage_from_refs(refs: Iterable[JobRef | InputProblem]) -> Coverage:
    """The coverage of already scanned jobs (see :func:`iter_job_refs`)."""
    uses: list[OpUse] = []
    models: set[str] = set()
    read: list[tuple[str, str]] = []
    not_ok: list[tuple[str, str, str]] = []
    problems: list[InputProblem] = []
    bad_rows: list[BadRows] = []
    for ref in refs:
        if isinstance(ref, InputProblem):
            if _tracer_of_dir(ref.job_key) in READERS:
                problems.append(ref)
            continue
        reader = READERS.get(ref.tracer)
        if reader is None:
            continue
        if ref.status != "ok":
            not_ok.append((ref.model, ref.tracer, ref.status))
            continue
        models.add(ref.model)
        try:
            result = reader(ref)
        except SourceError as exc:
            problems.append(InputProblem(ref.key, _run_rel(ref, exc.path), exc.reason))
            continue
        rows = result.rows
        if result.bad:
            bad_rows.append(BadRows(ref.key, _run_rel(ref, result.path), dict(result.bad)))
        read.append((ref.model, ref.tracer))
        uses.extend(
            OpUse(r.op, ref.model, ref.tracer, r.calls, r.signatures, r.self_time_us) for r in rows
        )
    uses.sort(key=lambda u: (u.source, u.op, u.model))
    return Coverage(
        models=tuple(sorted(models)),
        uses=tuple(uses),
        jobs_read=tuple(sorted(read)),
        not_ok=tuple(sorted(not_ok)),
        problems=tuple(problems),
        bad_rows=tuple(bad_rows),
    )


def _run_rel(ref: JobRef, rel: str) -> str:
    return f"{JOBS_DIR}/{ref.key}/{rel}"
