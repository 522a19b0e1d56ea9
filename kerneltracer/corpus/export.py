"""Write a :class:`Corpus`, all atomically:

- ``corpus.parquet``: one row per signature (schema in :mod:`kerneltracer.corpus.schema`);
- ``operator_inp.txt``: every signature, counts summed over models;
- ``operator_inp/<model>.txt``: one log per model with that model's counts, the layout
  per-model benchmark scripts expect;
- ``corpus_summary.json``: models, ops, signatures, problems.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from kerneltracer.corpus.model import Corpus, Signature
from kerneltracer.corpus.operator_inp import Entry, format_entry, format_log
from kerneltracer.corpus.schema import PARQUET, to_table
from kerneltracer.jsonio import atomic_write_json, atomic_write_text, atomic_writer

ALL_LOG = "operator_inp.txt"
MODEL_LOGS = "operator_inp"
SUMMARY = "corpus_summary.json"


def model_file_name(model: str) -> str:
    """A safe file name for a model label (no separators, no leading dots)."""
    safe = "".join(c if c.isalnum() or c in "._-" else "-" for c in model).strip(".-")
    return (safe or "model") + ".txt"


def _blocks(sigs: list[Signature], model: str | None) -> list[tuple[str, list[Entry]]]:
    blocks: dict[str, list[Entry]] = {}
    for s in sigs:
        count = s.calls if model is None else s.model_calls.get(model, 0)
        if count:
            blocks.setdefault(s.op, []).append(Entry(count, s.inputs, s.kwargs))
    return list(blocks.items())


def write_corpus(corpus: Corpus, out_dir: Path) -> list[Path]:
    import pyarrow.parquet as pq

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    lines = [format_entry(Entry(s.calls, s.inputs, s.kwargs)) for s in corpus.signatures]
    with atomic_writer(out_dir / PARQUET) as fh:
        pq.write_table(to_table(corpus.signatures, lines), fh, compression="zstd")
    written = [out_dir / PARQUET]
    atomic_write_text(out_dir / ALL_LOG, format_log(_blocks(corpus.signatures, None)))
    written.append(out_dir / ALL_LOG)
    logs = out_dir / MODEL_LOGS
    logs.mkdir(exist_ok=True)
    keep = set()
    for model in corpus.models:
        name = model_file_name(model)
        keep.add(name)
        atomic_write_text(logs / name, format_log(_blocks(corpus.signatures, model)))
        written.append(logs / name)
    for stale in logs.glob("*.txt"):  # a model no longer in the run
        if stale.name not in keep:
            stale.unlink(missing_ok=True)
    atomic_write_json(out_dir / SUMMARY, summary(corpus))
    written.append(out_dir / SUMMARY)
    return written


def summary(corpus: Corpus) -> dict[str, Any]:
    per_model = corpus.by_model()
    return {
        "schema_version": 1,
        "models": list(corpus.models),
        "ops": len(corpus.ops()),
        "signatures": len(corpus.signatures),
        "calls": sum(s.calls for s in corpus.signatures),
        "signatures_per_model": {m: len(v) for m, v in per_model.items()},
        "not_ok": [{"model": m, "status": s} for m, s in corpus.not_ok],
        "problems": [asdict(p) for p in corpus.problems],
    }
