"""Build the corpus of a run dir: every ok torch_dispatch job's ``dispatch_ops.jsonl``,
merged into one :class:`Signature` per unique (op, inputs, kwargs).

Jobs are read one at a time and only the merged table is kept, so a run of hundreds of
models stays small in memory. A job or line that cannot be read becomes a
:class:`CorpusProblem`; the other jobs go on.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from kerneltracer.corpus.model import (
    Corpus,
    CorpusProblem,
    Signature,
    id_of_key,
    merge_kwargs,
    merge_ranges,
    signature_key,
)
from kerneltracer.coverage.scan import InputProblem, JobRef, iter_job_refs
from kerneltracer.jobs import JOBS_DIR

SOURCE = "torch_dispatch"
OPS_FILE = "dispatch_ops.jsonl"
MAX_MODULE_PATHS = 32


class _RowError(Exception):
    pass


def build_corpus(run_dir: Path) -> Corpus:
    """Read every ok torch_dispatch job of ``run_dir`` into a :class:`Corpus`."""
    return corpus_from_refs(iter_job_refs(Path(run_dir)))


def corpus_from_refs(refs: Iterable[JobRef | InputProblem]) -> Corpus:
    table: dict[bytes, Signature] = {}
    models: set[str] = set()
    problems: list[CorpusProblem] = []
    not_ok: list[tuple[str, str]] = []
    for ref in refs:
        if isinstance(ref, InputProblem):
            if ref.job_key.rsplit("/", 1)[-1].split(".", 1)[0] == SOURCE:
                problems.append(CorpusProblem(ref.job_key, ref.path, ref.reason))
            continue
        if ref.tracer != SOURCE:
            continue
        if ref.status != "ok":
            not_ok.append((ref.model, ref.status))
            continue
        rel = _ops_rel(ref)
        try:
            lines = (ref.job_dir / rel).read_bytes().splitlines()
        except OSError as exc:
            where = f"{JOBS_DIR}/{ref.key}/{rel}"
            problems.append(CorpusProblem(ref.model, where, f"unreadable ({exc.strerror or exc})"))
            continue
        models.add(ref.model)
        for lineno, row, ranged in _rows(lines):
            try:
                _add(table, ref.model, row, ranged)
            except _RowError as exc:
                where = f"{JOBS_DIR}/{ref.key}/{rel}:{lineno}"
                problems.append(CorpusProblem(ref.model, where, str(exc)))
    sigs = sorted(table.values(), key=lambda s: (s.op, -s.calls, s.sig_id))
    return Corpus(tuple(sorted(models)), sigs, problems, sorted(not_ok))


def _ops_rel(ref: JobRef) -> str:
    return next((o for o in ref.outputs if o == OPS_FILE or o.endswith(f"/{OPS_FILE}")), OPS_FILE)


def _rows(lines: list[bytes]) -> Iterator[tuple[int, Any, bool]]:
    """(line number, parsed row, whether it may hold integer ranges) per non-blank line."""
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            # Most rows have no integer tensor: skip stripping and merging ranges for them.
            yield n, orjson.loads(line), b'"min"' in line
        except orjson.JSONDecodeError:
            yield n, None, False


def _add(table: dict[bytes, Signature], model: str, row: Any, ranged: bool = True) -> None:
    if not isinstance(row, dict):
        raise _RowError("not a JSON object")
    try:
        op, phase, count = str(row["op"]), str(row["phase"]), row["count"]
        inputs, kwargs, outputs = row["inputs"], row.get("kwargs") or {}, row["outputs"]
    except KeyError as exc:
        raise _RowError(f"missing field {exc.args[0]!r}") from None
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise _RowError(f"count is not a non-negative integer: {count!r}")
    if not isinstance(inputs, list) or not isinstance(kwargs, dict):
        raise _RowError("inputs is not a list or kwargs not an object")
    key = signature_key(op, inputs, kwargs, ranged)
    sig = table.get(key)
    if sig is None:
        sig = table[key] = Signature(id_of_key(key), op, inputs, kwargs, outputs)
    elif ranged:
        sig.inputs = merge_ranges(sig.inputs, inputs)
        sig.kwargs = merge_kwargs(sig.kwargs, kwargs)
    sig.phase_calls[phase] = sig.phase_calls.get(phase, 0) + count
    sig.model_calls[model] = sig.model_calls.get(model, 0) + count
    for path, calls in (row.get("modules") or {}).items():
        if path in sig.modules or len(sig.modules) < MAX_MODULE_PATHS:
            sig.modules[path] = sig.modules.get(path, 0) + int(calls)
