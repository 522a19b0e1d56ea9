"""The readiness files: ``readiness.json`` (validated with pydantic when read back, e.g. by
the run report), ``readiness_ranked.csv`` and ``readiness_blockers.csv``, all atomic."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from pydantic import BaseModel, ValidationError

from kerneltracer.corpus.readiness import Readiness
from kerneltracer.errors import InputFileError
from kerneltracer.inputguard import SMALL_FILE, read_input
from kerneltracer.jsonio import atomic_write_bytes, atomic_write_text

JSON = "readiness.json"
RANKED_CSV = "readiness_ranked.csv"
BLOCKERS_CSV = "readiness_blockers.csv"


class BlockerOut(BaseModel):
    op: str
    calls: int
    est_time_us: float | None = None


class RankedOut(BaseModel):
    rank: int
    op: str
    models_blocked: list[str]
    unblocks_alone: int
    newly_ready: int
    ready_after: int
    calls: int
    est_time_us: float | None = None


class ReadinessFile(BaseModel):
    schema_version: int = 2  # 2: time_weight, time_note
    support: str
    # what est_time_us is: "replay" (measured), "estimate" (from shapes), "none";
    # None in files from before it was recorded (replayed times, if any)
    time_weight: str | None = None
    time_note: str = ""
    ops_checked: int
    models: list[str]
    ready_models: list[str]
    blockers: dict[str, list[BlockerOut]]
    ranked: list[RankedOut]


def _to_file(r: Readiness) -> ReadinessFile:
    return ReadinessFile(
        support=r.support,
        time_weight=r.time_weight,
        time_note=r.time_note,
        ops_checked=r.ops_checked,
        models=list(r.models),
        ready_models=r.ready_models,
        blockers={
            m: [BlockerOut(op=b.op, calls=b.calls, est_time_us=b.est_time_us) for b in bs]
            for m, bs in r.blockers.items()
        },
        ranked=[
            RankedOut(
                rank=o.rank,
                op=o.op,
                models_blocked=list(o.models_blocked),
                unblocks_alone=o.unblocks_alone,
                newly_ready=o.newly_ready,
                ready_after=o.ready_after,
                calls=o.calls,
                est_time_us=o.est_time_us,
            )
            for o in r.ranked
        ],
    )


def write_readiness(r: Readiness, out_dir: Path) -> list[Path]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    doc = _to_file(r)
    atomic_write_bytes(out_dir / JSON, doc.model_dump_json(indent=2).encode() + b"\n")
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(
        (
            "rank",
            "op",
            "models_blocked",
            "unblocks_alone",
            "newly_ready",
            "ready_after",
            "calls",
            "est_time_us",
            "time_weight",
            "models",
        )
    )
    for o in doc.ranked:
        est = "" if o.est_time_us is None else o.est_time_us
        w.writerow(
            (
                o.rank,
                o.op,
                len(o.models_blocked),
                o.unblocks_alone,
                o.newly_ready,
                o.ready_after,
                o.calls,
                est,
                doc.time_weight,
                ";".join(o.models_blocked),
            )
        )
    atomic_write_text(out_dir / RANKED_CSV, buf.getvalue())
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(("model", "op", "calls", "est_time_us", "time_weight"))
    for model, items in doc.blockers.items():
        for b in items:
            est = "" if b.est_time_us is None else b.est_time_us
            w.writerow((model, b.op, b.calls, est, doc.time_weight))
    atomic_write_text(out_dir / BLOCKERS_CSV, buf.getvalue())
    return [out_dir / JSON, out_dir / RANKED_CSV, out_dir / BLOCKERS_CSV]


def read_readiness(path: Path) -> ReadinessFile | None:
    """The readiness file at ``path``; None when there is none; ValueError when corrupt."""
    try:
        data = read_input(Path(path), SMALL_FILE, what="readiness file", gzip=False)
    except InputFileError as exc:
        if not Path(path).exists():
            return None
        raise ValueError(str(exc)) from None
    try:
        return ReadinessFile.model_validate_json(data)
    except ValidationError as exc:
        raise ValueError(f"{path}: not a readiness file ({exc.error_count()} errors)") from None
