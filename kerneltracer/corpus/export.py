"""Write a :class:`Corpus`, all atomically:

- ``corpus.parquet``: one row per signature (schema in :mod:`kerneltracer.corpus.schema`);
- ``operator_inp.txt``: every signature, counts summed over models;
- ``operator_inp/<model>.txt``: one log per model with that model's counts, the layout
  per-model benchmark scripts expect;
- ``corpus_summary.json``: models, ops, signatures, problems, estimated cost totals;
- ``costs_by_op.csv``, ``costs_by_module.csv``, ``costs_by_model.csv``, ``unknown_ops.csv``:
  costs estimated from shapes on one device (see :mod:`kerneltracer.corpus.costs`).
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kerneltracer.corpus.costs import corpus_breakdown, cost_summary, signature_costs, write_costs
from kerneltracer.corpus.model import Corpus, Signature
from kerneltracer.corpus.operator_inp import COUNT, LOG_NAME, format_lines
from kerneltracer.corpus.schema import PARQUET, to_table
from kerneltracer.costmodel import DEFAULT_DEVICE, CostBreakdown, Device, OpCost, load_devices
from kerneltracer.jsonio import atomic_write_json, atomic_write_text, atomic_writer, remove_output

if TYPE_CHECKING:
    import pyarrow as pa

_ALL_LOG = LOG_NAME
_MODEL_LOGS = "operator_inp"
SUMMARY = "corpus_summary.json"


def _model_file_name(model: str) -> str:
    """A safe file name for a model label (no separators, no leading dots)."""
    safe = "".join(c if c.isalnum() or c in "._-" else "-" for c in model).strip(".-")
    return (safe or "model") + ".txt"


def _log(sigs: list[Signature], calls: dict[str, str], model: str | None) -> str:
    """The operator_inp log of ``sigs``; a signature with no entry in ``calls`` (it could not
    be written as inert text) is left out."""
    blocks: dict[str, list[str]] = {}
    for s in sigs:
        count = s.calls if model is None else s.model_calls.get(model, 0)
        if count and s.sig_id in calls:
            blocks.setdefault(s.op, []).append(f"{COUNT}{count}, {calls[s.sig_id]}")
    return format_lines(list(blocks.items()))


def corpus_table(corpus: Corpus, costs: list[OpCost | None] | None = None) -> pa.Table:
    """The Arrow table of ``corpus.parquet`` (the Python API's ``Run.corpus()`` too);
    ``costs``: each signature's estimate, computed here when not given."""
    calls = corpus.log_calls
    # The text column: empty where the signature cannot be written inertly.
    lines = [
        f"{COUNT}{s.calls}, {calls[s.sig_id]}" if s.sig_id in calls else ""
        for s in corpus.signatures
    ]
    costs = signature_costs(corpus.signatures) if costs is None else costs
    return to_table(corpus.signatures, lines, costs, corpus.placements)


def write_corpus(corpus: Corpus, out_dir: Path, device: Device | None = None) -> list[Path]:
    """``device``: the one estimated times are for (default: the table's default)."""
    import pyarrow.parquet as pq

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    device = device if device is not None else load_devices().get(DEFAULT_DEVICE)
    calls = corpus.log_calls
    costs = signature_costs(corpus.signatures)
    with atomic_writer(out_dir / PARQUET) as fh:
        pq.write_table(corpus_table(corpus, costs), fh, compression="zstd")
    written = [out_dir / PARQUET]
    estimated = corpus_breakdown(corpus.signatures, costs, device)
    written += write_costs(estimated, out_dir)
    atomic_write_text(out_dir / _ALL_LOG, _log(corpus.signatures, calls, None))
    written.append(out_dir / _ALL_LOG)
    logs = out_dir / _MODEL_LOGS
    logs.mkdir(exist_ok=True)
    keep = set()
    for model, sigs in corpus.by_model().items():
        name = _model_file_name(model)
        if name in keep:  # "org/m" and "org-m" sanitise alike: keep both logs
            name = f"{name[:-4]}-{hashlib.sha256(model.encode()).hexdigest()[:8]}.txt"
        keep.add(name)
        atomic_write_text(logs / name, _log(sigs, calls, model))
        written.append(logs / name)
    for stale in logs.glob("*.txt"):  # a model no longer in the run
        if stale.name not in keep:
            remove_output(stale)
    atomic_write_json(out_dir / SUMMARY, summary(corpus, estimated))
    written.append(out_dir / SUMMARY)
    return written


def summary(corpus: Corpus, estimated: CostBreakdown | None = None) -> dict[str, Any]:
    per_model = corpus.by_model()
    return {
        "schema_version": 2,  # 2: est_costs
        "models": list(corpus.models),  # one label per model variant (mode, phase)
        "distinct_models": len(corpus.distinct_models),
        # Traced with weights fake: shapes and ops of the full-size model, no values, no times.
        "fake_weight_models": list(corpus.fake_models),
        # A parallel job's ranks are model labels of their own: where each one ran.
        "placements": {m: asdict(p) for m, p in corpus.placements.items()},
        "ops": len(corpus.ops()),
        "signatures": len(corpus.signatures),
        "calls": sum(s.calls for s in corpus.signatures),
        "signatures_per_model": {m: len(v) for m, v in per_model.items()},
        "not_ok": [{"model": m, "status": s} for m, s in corpus.not_ok],
        "problems": [asdict(p) for p in corpus.problems],
        "est_costs": cost_summary(estimated) if estimated is not None else None,
    }
