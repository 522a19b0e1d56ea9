"""Cross-model operator coverage: which ops each model runs, how often, and where time goes.

:func:`build_coverage` reads every *ok* job with an op-level artefact (a dispatch summary,
key_averages table, op table or chrome trace: see :mod:`.sources`) once, one job at a time,
and keeps only the per-op aggregates (a few hundred rows per job), so a run of 500 models
stays small in memory.
Inputs that cannot be read are collected as :class:`InputProblem` rather than raised.
A source is named by the tracer of the jobs it was read from; which tracers those are is
decided by the artefacts they wrote, never by their names.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from kerneltracer.core.artefacts import ArtefactKind
from kerneltracer.core.identity import DEFAULT_MODE, DEFAULT_PHASE
from kerneltracer.core.layout import RUN
from kerneltracer.core.ranks import job_layout, rank_dirs, rank_label
from kerneltracer.costmodel import DEFAULT_DEVICE, Device, load_devices
from kerneltracer.coverage.costs import OpEstimate, job_op_costs
from kerneltracer.coverage.gpu_time import attributed_gpu_time
from kerneltracer.coverage.scan import InputProblem, JobRef, iter_job_refs
from kerneltracer.coverage.sources import READERS, SOURCE_KINDS, SourceError, source_artefacts


@dataclass(frozen=True, slots=True)
class OpUse:
    """One (op, model, source) cell."""

    op: str  # "aten.mm.default" (dispatch summary), "aten::mm" (profiler) or a kernel name
    model: str  # the model's display id (plus " [mode]" for non-eval modes)
    source: str  # the tracer the numbers come from
    calls: int
    signatures: int | None  # distinct input signatures (dispatch summaries only), else None
    self_time_us: float | None  # total self time where a profile exists, else None
    # Estimated from shapes (dispatch signatures only; None: not estimable or no signatures)
    est_flops: int | None = None
    est_bytes: int | None = None
    est_time_us: float | None = None  # roofline time lower bound on Coverage.est_device


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
    # (source, artefact kind it was read from), sorted; one kind per source
    source_kinds: tuple[tuple[str, str], ...] = ()
    # Models read from jobs with weights fake: their op counts are real, no time is measured.
    fake_models: tuple[str, ...] = ()
    est_device: str = ""  # the device the estimated times are for
    # (model, source) whose self_time_us is the GPU time attributed to each op (ops.csv)
    gpu_attributed: tuple[tuple[str, str], ...] = ()
    # label -> (display id, mode, phase) of every model variant read: labels are per
    # variant, a model traced in two phases has two labels and is one model
    variants: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    _index: dict[str, dict[str, dict[str, OpUse]]] = field(
        init=False, repr=False, compare=False, hash=False, default_factory=dict
    )

    def __post_init__(self) -> None:
        for use in self.uses:
            self._index.setdefault(use.source, {}).setdefault(use.op, {})[use.model] = use

    def variant(self, label: str) -> tuple[str, str, str]:
        """(display id, mode, phase) of a model label (a label not read: itself, defaults)."""
        return self.variants.get(label, (label, DEFAULT_MODE, DEFAULT_PHASE))

    def distinct_models(self, labels: Iterable[str] | None = None) -> list[str]:
        """The distinct models (display ids) of ``labels`` (default: every model read)."""
        labels = self.models if labels is None else labels
        return sorted({self.variant(m)[0] for m in labels})

    def sources(self) -> list[str]:
        return sorted({s for _, s in self.jobs_read} | set(self._index))

    def preferred_sources(self) -> list[str]:
        """The sources, best artefact kind first (dispatch summaries: every aten op call)."""
        rank = {str(k): i for i, k in enumerate(SOURCE_KINDS)}
        kinds = dict(self.source_kinds)
        return sorted(self.sources(), key=lambda s: (rank.get(kinds.get(s, ""), len(rank)), s))

    def default_source(self) -> str:
        """The source the ``source``-less queries use: the best one read, "" if none."""
        return next(iter(self.preferred_sources()), "")

    def models_for(self, source: str | None = None) -> list[str]:
        """Models whose job of ``source`` was read (possibly with no ops at all)."""
        source = self.default_source() if source is None else source
        return [m for m, s in self.jobs_read if s == source]

    def ops(self, source: str | None = None) -> list[str]:
        source = self.default_source() if source is None else source
        return sorted(self._index.get(source, {}))

    def matrix(self, source: str | None = None) -> dict[str, dict[str, int]]:
        """op -> model -> calls; a model that does not run the op has no entry."""
        source = self.default_source() if source is None else source
        by_op = self._index.get(source, {})
        return {op: {m: u.calls for m, u in sorted(by_op[op].items())} for op in sorted(by_op)}

    def signatures(self, source: str | None = None) -> dict[str, dict[str, int]]:
        """op -> model -> distinct input signatures (dispatch summaries record them)."""
        source = self.default_source() if source is None else source
        by_op = self._index.get(source, {})
        return {
            op: {m: u.signatures for m, u in sorted(by_op[op].items()) if u.signatures is not None}
            for op in sorted(by_op)
        }

    def unique_ops(self, source: str | None = None) -> dict[str, list[str]]:
        """model -> the ops no other model runs (every model read for ``source`` is a key)."""
        source = self.default_source() if source is None else source
        unique: dict[str, list[str]] = {m: [] for m in self.models_for(source)}
        for op, by_model in sorted(self._index.get(source, {}).items()):
            if len(by_model) == 1:
                unique.setdefault(next(iter(by_model)), []).append(op)
        return unique

    def top_ops_by_time(self, n: int = 20, source: str | None = None) -> list[tuple[str, float]]:
        """The ops with the most self time summed over models, from the timed sources."""
        totals: dict[str, float] = defaultdict(float)
        for src in self._index if source is None else (source,):
            for op, by_model in self._index.get(src, {}).items():
                for use in by_model.values():
                    if use.self_time_us is not None:
                        totals[op] += use.self_time_us
        ranked = sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))
        return ranked[: max(n, 0)]

    def top_ops_by_est_time(self, n: int = 20) -> list[tuple[str, float]]:
        """The ops with the most estimated time (roofline lower bound from shapes) summed
        over models; ops with no estimate are left out."""
        totals: dict[str, float] = defaultdict(float)
        for use in self.uses:
            if use.est_time_us is not None:
                totals[use.op] += use.est_time_us
        ranked = sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))
        return ranked[: max(n, 0)]

    def use(self, op: str, model: str, source: str | None = None) -> OpUse | None:
        source = self.default_source() if source is None else source
        return self._index.get(source, {}).get(op, {}).get(model)

    def by_job(self) -> dict[tuple[str, str], dict[str, OpUse]]:
        """(model, source) -> op -> use, for every job read (empty dict for a job with no ops)."""
        grouped: dict[tuple[str, str], dict[str, OpUse]] = {job: {} for job in self.jobs_read}
        for use in self.uses:
            grouped.setdefault((use.model, use.source), {})[use.op] = use
        return grouped


def _tracer_of_dir(job_key: str) -> str:
    return job_key.rsplit("/", 1)[-1].split(".", 1)[0]


def build_coverage(run_dir: Path, device: Device | None = None) -> Coverage:
    """Read every ok coverage-source job of ``run_dir`` into a :class:`Coverage`;
    ``device``: the one estimated times are for (default: the device table's default)."""
    return coverage_from_refs(iter_job_refs(run_dir), device=device)


def _registered_source_tracers() -> frozenset[str]:
    """The registered tracers that declare an artefact kind coverage reads."""
    from kerneltracer.tracers.registry import tracers_writing

    return tracers_writing(SOURCE_KINDS)


@dataclass
class _Reading:
    """What :func:`coverage_from_refs` accumulates while it streams the jobs."""

    device: Device
    uses: list[OpUse] = field(default_factory=list)
    models: set[str] = field(default_factory=set)
    read: list[tuple[str, str]] = field(default_factory=list)
    kinds: dict[str, ArtefactKind] = field(default_factory=dict)
    bad_rows: list[BadRows] = field(default_factory=list)
    # In stream order; with the tracer a problem or failure counts for only if it is a source
    problems: list[tuple[InputProblem, str | None]] = field(default_factory=list)
    not_ok: list[tuple[str, str, str]] = field(default_factory=list)
    fake: set[str] = field(default_factory=set)
    gpu_attributed: set[tuple[str, str]] = field(default_factory=set)
    variants: dict[str, tuple[str, str, str]] = field(default_factory=dict)

    def add(self, ref: JobRef, writers: frozenset[str]) -> None:
        if ref.status != "ok":
            self.not_ok.append((ref.model, ref.tracer, ref.status))
            return
        ranks = rank_dirs(ref.job_dir)
        if ranks:  # a parallel job: each rank dir is a model of its own, as in the corpus
            layout = job_layout(ref.job_dir)[0].label()
            for rank, rank_dir in ranks.items():
                self.add(_rank_ref(ref, rank, rank_dir, layout), writers)
            return
        found = source_artefacts(ref)
        if found is None:
            if ref.tracer in writers:  # it should have written one: say so
                reason = "lists no artefact coverage reads"
                self.problems.append((InputProblem(ref.key, _run_rel(ref, ""), reason), None))
            return
        self.models.add(ref.model)
        self.variants[ref.model] = (ref.display or ref.model, ref.mode, ref.phase)
        if ref.weights == "fake":
            self.fake.add(ref.model)
        kind, rels = found
        try:
            result = READERS[kind](ref, rels)
        except SourceError as exc:
            self.problems.append((InputProblem(ref.key, _run_rel(ref, exc.path), exc.reason), None))
            return
        self.kinds.setdefault(ref.tracer, kind)
        if result.bad:
            self.bad_rows.append(BadRows(ref.key, _run_rel(ref, result.path), dict(result.bad)))
        self.read.append((ref.model, ref.tracer))
        ests: dict[str, OpEstimate | None] = {}
        if kind == ArtefactKind.DISPATCH_SUMMARY:
            costs = job_op_costs(ref, self.device)
            ests = costs.ops
            if costs.bad:
                path = _run_rel(ref, costs.path)
                self.bad_rows.append(BadRows(ref.key, path, dict(sorted(costs.bad.items()))))
        gpu = None if kind == ArtefactKind.DISPATCH_SUMMARY else attributed_gpu_time(ref.job_dir)
        if gpu is not None:
            self.gpu_attributed.add((ref.model, ref.tracer))
        for r in result.rows:
            est = ests.get(r.op)
            time_us = r.self_time_us if gpu is None else gpu.get(r.op, 0.0)
            self.uses.append(
                OpUse(
                    r.op,
                    ref.model,
                    ref.tracer,
                    r.calls,
                    r.signatures,
                    time_us,
                    *((est.flops, est.bytes, est.time_us) if est else ()),
                )
            )


def coverage_from_refs(
    refs: Iterable[JobRef | InputProblem],
    source_tracers: frozenset[str] | None = None,
    device: Device | None = None,
) -> Coverage:
    """The coverage of already scanned jobs (see :func:`iter_job_refs`).

    A job that failed or never finished has no artefacts to tell what it would have written:
    it is listed when its tracer is a source, one registered as writing a kind coverage reads
    (``source_tracers``, default: the registry's) or one read in this run.
    """
    writers = _registered_source_tracers() if source_tracers is None else source_tracers
    acc = _Reading(device if device is not None else load_devices().get(DEFAULT_DEVICE))
    for ref in refs:
        if isinstance(ref, InputProblem):
            acc.problems.append((ref, _tracer_of_dir(ref.job_key)))
        else:
            acc.add(ref, writers)
    sources = writers | {s for _, s in acc.read} | acc.kinds.keys()
    acc.uses.sort(key=lambda u: (u.source, u.op, u.model))
    return Coverage(
        models=tuple(sorted(acc.models)),
        uses=tuple(acc.uses),
        jobs_read=tuple(sorted(acc.read)),
        not_ok=tuple(sorted(n for n in acc.not_ok if n[1] in sources)),
        problems=tuple(p for p, tracer in acc.problems if tracer is None or tracer in sources),
        bad_rows=tuple(acc.bad_rows),
        source_kinds=tuple(sorted((s, str(k)) for s, k in acc.kinds.items())),
        fake_models=tuple(sorted(acc.fake)),
        est_device=acc.device.key,
        gpu_attributed=tuple(sorted(acc.gpu_attributed)),
        variants=dict(sorted(acc.variants.items())),
    )


def _rank_ref(ref: JobRef, rank: int, path: Path, layout: str) -> JobRef:
    """A rank dir as a job of its own: its files have a single job's names."""
    try:
        names = tuple(sorted(p.name for p in path.iterdir() if p.is_file()))
    except OSError:
        names = ()
    return replace(
        ref,
        key=f"{ref.key}/{path.name}",  # RUN.job(key).dir is the rank dir
        model=rank_label(ref.model, layout, rank),
        job_dir=path,
        outputs=names,
        recorded_kinds=(),
    )


def _run_rel(ref: JobRef, rel: str) -> str:
    return str(RUN.job(ref.key).dir / rel)
