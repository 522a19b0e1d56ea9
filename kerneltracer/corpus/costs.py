"""The corpus's estimated costs (:mod:`kerneltracer.costmodel`), ranked, as CSV files.

Every figure is estimated from shapes and dtypes — FLOPs, bytes moved and the roofline
time lower bound on one device — never a measured time; columns say so with ``est_``.

- ``costs_by_op.csv``: per (model, op): calls, est FLOPs / bytes, time lower bound, what
  bounds it, its share of the model's estimated time; each model's ops most costly first;
- ``costs_by_module.csv``: the same per (model, module path, layer indices folded);
- ``costs_by_model.csv``: per model totals, most costly first;
- ``unknown_ops.csv``: the ops without an estimate, with their calls: what the totals lack.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kerneltracer.corpus.model import Signature
from kerneltracer.costmodel import (
    CostBreakdown,
    CostedSignature,
    Device,
    OpCost,
    Totals,
    breakdown,
    estimate,
    roofline,
)
from kerneltracer.jsonio import atomic_write_text

_BY_OP_CSV = "costs_by_op.csv"
_BY_MODULE_CSV = "costs_by_module.csv"
_BY_MODEL_CSV = "costs_by_model.csv"
_UNKNOWN_CSV = "unknown_ops.csv"
_TOTAL_COLUMNS = (
    "calls",
    "est_flops",
    "est_bytes",
    "est_intensity",
    "est_time_lb_us",
    "est_bound",
    "unknown_calls",
)


def signature_costs(sigs: Iterable[Signature]) -> list[OpCost | None]:
    """Each signature's estimated cost per call (None: no estimate), in order."""
    return [estimate(s.op, s.inputs, s.kwargs, s.outputs) for s in sigs]


def est_time_us(sigs: Iterable[Signature], device: Device) -> dict[str, float]:
    """sig_id -> the roofline time lower bound of one call on ``device``, in µs, for every
    signature with an estimate (the others are left out, not taken as free)."""
    out = {}
    for s in sigs:
        cost = estimate(s.op, s.inputs, s.kwargs, s.outputs)
        if cost is not None:
            out[s.sig_id] = roofline(cost, device).time_s * 1e6
    return out


def est_time_note(device: Device) -> str:
    return f"estimated from shapes: roofline time lower bound on {device.key} ({device.name})"


def corpus_breakdown(
    sigs: list[Signature], costs: list[OpCost | None], device: Device
) -> CostBreakdown:
    return breakdown(
        (
            CostedSignature(s.op, c, s.model_calls, s.model_modules)
            for s, c in zip(sigs, costs, strict=True)
        ),
        device,
    )


def _totals(t: Totals) -> list[Any]:
    if t.calls and t.unknown_calls == t.calls:  # nothing estimated: no figure, not zero
        return [t.calls, "", "", "", "", "", t.unknown_calls]
    intensity = round(t.flops / t.bytes, 3) if t.bytes else ""
    return [
        t.calls,
        t.flops,
        t.bytes,
        intensity,
        round(t.time_s * 1e6, 3),
        t.bound,
        t.unknown_calls,
    ]


def _share(b: CostBreakdown, model: str, t: Totals) -> Any:
    share = b.share(model, t) if t.unknown_calls < t.calls else None
    return "" if share is None else round(share, 6)


def _csv(rows: list[list[Any]]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue()


def write_costs(b: CostBreakdown, out_dir: Path) -> list[Path]:
    out_dir = Path(out_dir)
    files = {
        _BY_OP_CSV: (tables := cost_tables(b))["op"],
        _BY_MODULE_CSV: tables["module"],
        _BY_MODEL_CSV: tables["model"],
        _UNKNOWN_CSV: tables["unknown"],
    }
    for name, rows in files.items():
        atomic_write_text(out_dir / name, _csv(rows))
    return [out_dir / name for name in files]


def cost_tables(b: CostBreakdown) -> dict[str, list[list[Any]]]:
    """The rows (header first; "" = no figure) of costs_by_{op,module,model}.csv and
    unknown_ops.csv, by "op", "module", "model", "unknown": the files and the Python API's
    ``Run.costs()`` are the same rows."""
    head = list(_TOTAL_COLUMNS)
    by_op: list[list[Any]] = [["model", "op", *head, "est_share", "device"]]
    by_op += [[m, op, *_totals(t), _share(b, m, t), b.device] for m, op, t in b.ranked(b.by_op)]
    by_module: list[list[Any]] = [["model", "module", *head, "est_share", "device"]]
    by_module += [
        [m, mod, *_totals(t), _share(b, m, t), b.device] for m, mod, t in b.ranked(b.by_module)
    ]
    unknown_by_model: dict[str, int] = {}
    for u in b.unknown:
        for m in u.models:
            unknown_by_model[m] = unknown_by_model.get(m, 0) + 1
    by_model: list[list[Any]] = [
        ["model", *head, "est_compute_us", "est_memory_us", "unknown_ops", "device"]
    ]
    models = sorted(b.by_model.items(), key=lambda kv: (-kv[1].time_s, kv[0]))
    by_model += [
        [
            m,
            *_totals(t),
            round(t.compute_s * 1e6, 3),
            round(t.memory_s * 1e6, 3),
            unknown_by_model.get(m, 0),
            b.device,
        ]
        for m, t in models
    ]
    unknown: list[list[Any]] = [["op", "calls", "signatures", "n_models", "reason", "models"]]
    unknown += [
        [
            u.op,
            u.calls,
            u.signatures,
            len(u.models),
            "arguments not understood" if u.has_formula else "no formula",
            ";".join(u.models),
        ]
        for u in b.unknown
    ]
    return {"op": by_op, "module": by_module, "model": by_model, "unknown": unknown}


def cost_summary(b: CostBreakdown, top: int = 20) -> dict[str, Any]:
    """For ``corpus_summary.json``: the device, per-model totals, top ops, unknown ops."""
    return {
        "device": b.device,
        "note": "estimated from shapes (roofline lower bound), not measured",
        "models": {
            m: {
                "est_flops": t.flops,
                "est_bytes": t.bytes,
                "est_time_lb_us": t.time_s * 1e6,
                "unknown_calls": t.unknown_calls,
            }
            for m, t in sorted(b.by_model.items())
        },
        "top_ops": [
            {"op": op, "calls": t.calls, "est_time_lb_us": t.time_s * 1e6, "est_bound": t.bound}
            for op, t in b.top_ops(top)
        ],
        "unknown_ops": [{"op": u.op, "calls": u.calls} for u in b.unknown],
    }
