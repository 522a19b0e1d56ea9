"""Build the corpus of a run dir: every ok job's ``dispatch_signatures`` artefacts (the
``dispatch_ops.jsonl`` of torch_dispatch), merged into one :class:`Signature` per unique
(op, inputs, kwargs).

Jobs are read one at a time and only the merged table is kept, so a run of hundreds of
models stays small in memory. A job that cannot be read becomes a :class:`CorpusProblem`,
and so do the bad lines of a job (one problem per job file, counted by kind, with the
first one's line and reason); the other lines and jobs go on.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from kerneltracer.core.artefacts import ArtefactKind
from kerneltracer.core.dispatch_row import BadDispatchRow, DispatchRow, parse_dispatch_line
from kerneltracer.core.layout import JOB, RUN
from kerneltracer.core.modulepaths import bounded
from kerneltracer.core.ranks import RankJob, rank_dirs, rank_label, read_rank_job
from kerneltracer.core.signature import id_of_key, merge_kwargs, merge_ranges, signature_key
from kerneltracer.corpus.model import Corpus, CorpusProblem, Placement, Signature
from kerneltracer.corpus.operator_inp import LOG_NAME, inert_calls
from kerneltracer.coverage.scan import InputProblem, JobRef, iter_job_refs
from kerneltracer.errors import InputFileError
from kerneltracer.inputguard import read_input

_KIND = ArtefactKind.DISPATCH_SIGNATURES


def build_corpus(run_dir: Path) -> Corpus:
    """Read every ok job with dispatch signatures of ``run_dir`` into a :class:`Corpus`."""
    return _corpus_from_refs(iter_job_refs(Path(run_dir)))


def _corpus_from_refs(
    refs: Iterable[JobRef | InputProblem], source_tracers: frozenset[str] | None = None
) -> Corpus:
    """The corpus of scanned jobs. A job that failed or never finished counts when its
    tracer declares dispatch signatures (``source_tracers``, default: the registry's) or
    wrote them in this run."""
    if source_tracers is None:
        from kerneltracer.tracers.registry import tracers_writing

        source_tracers = tracers_writing((_KIND,))
    table: dict[bytes, Signature] = {}
    models: set[str] = set()
    fake: set[str] = set()
    placements: dict[str, Placement] = {}
    problems: list[tuple[CorpusProblem, str | None]] = []
    not_ok: list[tuple[str, str, str]] = []
    read: set[str] = set()
    ids: dict[str, str] = {}  # label -> display id
    for ref in refs:
        if isinstance(ref, InputProblem):
            tracer = ref.job_key.rsplit("/", 1)[-1].split(".", 1)[0]
            problems.append((CorpusProblem(ref.job_key, ref.path, ref.reason), tracer))
            continue
        if ref.status != "ok":
            not_ok.append((ref.model, ref.status, ref.tracer))
            continue
        rels = ref.artefact_names(_KIND)
        job = read_rank_job(ref.job_dir) if rank_dirs(ref.job_dir) else None
        if job is not None:  # a parallel job: each rank dir is a model label of its own
            rank_parts = {JOB.rank(r).name for r in job.ranks}
            rels = [r for r in rels if PurePosixPath(r).parts[0] not in rank_parts]
            labels = _read_ranks(table, models, placements, ref, job, problems)
            read.add(ref.tracer)
            ids.update(dict.fromkeys(labels, ref.display or ref.model))
            if ref.weights == "fake":
                fake.update(labels)
        if not rels and ref.tracer in source_tracers and job is None:
            where = str(RUN.job(ref.key).dir)
            problems.append((CorpusProblem(ref.model, where, f"lists no {_KIND} artefact"), None))
        read.update([ref.tracer] if rels else [])
        if rels and ref.weights == "fake":
            fake.add(ref.model)
        if rels:
            ids[ref.model] = ref.display or ref.model
        for rel in rels:
            problems += [(p, None) for p in _read_job(table, models, ref, rel)]
    for sig in table.values():  # every call keeps its module, in a bounded mapping
        sig.modules = bounded(sig.modules)
        sig.model_modules = {m: bounded(paths) for m, paths in sig.model_modules.items()}
    sigs = sorted(table.values(), key=lambda s: (s.op, -s.calls, s.sig_id))
    sources = source_tracers | read
    kept = [p for p, tracer in problems if tracer is None or tracer in sources]
    log_calls, refused = inert_calls((s.sig_id, s.op, s.inputs, s.kwargs) for s in sigs)
    by_id = {s.sig_id: s for s in sigs}
    kept += [
        CorpusProblem(
            next(iter(by_id[key].model_calls), ""),
            LOG_NAME,
            f"a signature of {by_id[key].op!r:.80} left out: {why}",
        )
        for key, why in refused
    ]
    return Corpus(
        tuple(sorted(models)),
        sigs,
        kept,
        sorted((m, st) for m, st, t in not_ok if t in sources),
        tuple(sorted(fake & models)),
        tuple(sorted({ids.get(m, m) for m in models})),
        log_calls,
        {m: p for m, p in placements.items() if m in models},
    )


def _read_ranks(
    table: dict[bytes, Signature],
    models: set[str],
    placements: dict[str, Placement],
    ref: JobRef,
    job: RankJob,
    problems: list[tuple[CorpusProblem, str | None]],
) -> list[str]:
    """Each rank dir's signatures under a label of its own; the labels, in rank order."""
    lay = job.layout
    labels = []
    for rank, data in job.ranks.items():
        label = rank_label(ref.model, lay.label(), rank)
        placements[label] = Placement(
            lay.label(), rank, job.peers(rank), lay.tp, lay.ep, lay.pp, lay.dp
        )
        models.add(label)
        labels.append(label)
        for row in data.rows:
            _add(table, label, row)
        if data.bad:
            where = str(RUN.job(ref.key).rank(rank))
            kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(data.bad.items()))
            problems.append((CorpusProblem(label, where, f"bad line(s) skipped ({kinds})"), None))
    return labels


def _read_job(
    table: dict[bytes, Signature], models: set[str], ref: JobRef, rel: str
) -> list[CorpusProblem]:
    where = str(RUN.job(ref.key).dir / rel)
    try:
        lines = read_input(ref.job_dir / rel, what="job output", text=True, gzip=False).splitlines()
    except InputFileError as exc:
        return [CorpusProblem(ref.model, where, f"unreadable ({exc})")]
    models.add(ref.model)
    bad: Counter[str] = Counter()
    first = ""
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = parse_dispatch_line(line)
        except BadDispatchRow as exc:
            bad[exc.kind] += 1
            first = first or f"line {lineno}: {exc.detail}"
            continue
        # Most rows have no integer tensor: skip stripping and merging ranges for them.
        _add(table, ref.model, row, b'"min"' in line or b'"true"' in line)
    if not bad:
        return []
    # One problem per job file, however many of its lines are bad: counted, by kind.
    kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(bad.items()))
    reason = f"{bad.total()} bad line(s) skipped ({kinds}); first: {first}"
    return [CorpusProblem(ref.model, where, reason)]


def _add(table: dict[bytes, Signature], model: str, row: DispatchRow, ranged: bool = True) -> None:
    op, inputs, kwargs = row.op, row.inputs, row.kwargs
    key = signature_key(op, inputs, kwargs, ranged)
    sig = table.get(key)
    if sig is None:
        sig = table[key] = Signature(id_of_key(key), op, inputs, kwargs, row.outputs)
    elif ranged:
        sig.inputs = merge_ranges(sig.inputs, inputs)
        sig.kwargs = merge_kwargs(sig.kwargs, kwargs)
    sig.phase_calls[row.phase] = sig.phase_calls.get(row.phase, 0) + row.count
    sig.model_calls[model] = sig.model_calls.get(model, 0) + row.count
    mine = sig.model_modules.setdefault(model, {})
    for path, calls in row.modules.items():
        sig.modules[path] = sig.modules.get(path, 0) + calls
        mine[path] = mine.get(path, 0) + calls
