"""Write replay results, all atomically, and read their times back (for readiness).

- ``replay.csv``: one row per signature: op, sig_id, signature (operator_inp args),
  status, reason, models, calls, time_us (median per call), total_us (calls x time);
- ``replay_models.csv``: per model and signature, the estimated share of the model's
  replayed op time (calls in that model x time per call / the model's total);
- ``replay.json``: the same plus counts by status and the settings used.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

from kerneltracer.corpus.operator_inp import Entry, Unwritable, format_entry
from kerneltracer.corpus.replay import ReplayOptions, ReplayResult
from kerneltracer.errors import InputFileError, UsageError
from kerneltracer.inputguard import read_input
from kerneltracer.jsonio import atomic_write_json, atomic_write_text

CSV = "replay.csv"
_MODELS_CSV = "replay_models.csv"
JSON = "replay.json"
COLUMNS = (
    "op",
    "sig_id",
    "signature",
    "status",
    "reason",
    "models",
    "calls",
    "time_us",
    "total_us",
)


def _signature_text(r: ReplayResult) -> str:
    try:
        return format_entry(Entry(r.sig.calls, r.sig.inputs, r.sig.kwargs)).split(", ", 1)[1]
    except Unwritable as exc:
        return f"(not written: {exc})"


def model_shares(results: list[ReplayResult]) -> dict[str, list[dict[str, Any]]]:
    """model -> its signatures with estimated time and share, largest first."""
    rows: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        if r.time_us is None:
            continue
        for model, calls in r.sig.model_calls.items():
            est = calls * r.time_us
            rows.setdefault(model, []).append(
                {"op": r.sig.op, "sig_id": r.sig.sig_id, "calls": calls, "est_us": est}
            )
    for items in rows.values():
        total = sum(i["est_us"] for i in items) or 1.0
        for i in items:
            i["share"] = i["est_us"] / total
        items.sort(key=lambda i: (-i["est_us"], i["op"], i["sig_id"]))
    return dict(sorted(rows.items()))


def _csv(header: tuple[str, ...], rows: list[tuple[Any, ...]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(tuple("" if v is None else v for v in row) for row in rows)
    return buf.getvalue()


def write_replay(
    results: list[ReplayResult], options: ReplayOptions, out_dir: Path, wall_s: float
) -> list[Path]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    ordered = sorted(results, key=lambda r: (-(r.total_us or 0.0), r.sig.op, r.sig.sig_id))
    rows = [
        (
            r.sig.op,
            r.sig.sig_id,
            _signature_text(r),
            r.status,
            r.reason,
            ";".join(r.sig.models),
            r.sig.calls,
            r.time_us,
            r.total_us,
        )
        for r in ordered
    ]
    atomic_write_text(out_dir / CSV, _csv(COLUMNS, rows))
    shares = model_shares(results)
    share_rows = [
        (m, i["op"], i["sig_id"], i["calls"], i["est_us"], i["share"])
        for m, items in shares.items()
        for i in items
    ]
    header = ("model", "op", "sig_id", "calls", "est_us", "share")
    atomic_write_text(out_dir / _MODELS_CSV, _csv(header, share_rows))
    doc = {
        "schema_version": 1,
        "device": options.device,
        "repeats": options.repeats,
        "threads": options.threads,
        "wall_s": wall_s,
        "counts": dict(Counter(r.status for r in results)),
        "results": [dict(zip(COLUMNS, row, strict=True)) for row in rows],
        "model_shares": shares,
    }
    atomic_write_json(out_dir / JSON, doc)
    return [out_dir / CSV, out_dir / _MODELS_CSV, out_dir / JSON]


def read_times(path: Path) -> dict[str, float]:
    """sig_id -> time per call (us) from a replay dir or its replay.json."""
    path = Path(path)
    if path.is_dir():
        path = path / JSON
    try:
        doc = orjson.loads(read_input(path, what="replay.json", json=True, gzip=False))
        return {
            str(r["sig_id"]): float(r["time_us"])
            for r in doc["results"]
            if r.get("time_us") is not None
        }
    except InputFileError as exc:
        raise UsageError(f"not a readable replay.json: {exc}") from None
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"{path}: not a readable replay.json ({exc})") from None
