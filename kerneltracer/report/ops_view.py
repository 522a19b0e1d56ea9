"""The fleet view of op attribution: the same op (and shapes) across models, from every
job's ``analysis/timeline/<trace>/ops.csv``: GPU time, calls, achieved rates and roofline
efficiency per model, and each job's attributed share (``ops.json``).

Written as ``ops_fleet.csv`` (long: one row per op signature × model) and rendered as the
report's ``ops.html``. A job whose files cannot be read is listed with why, never dropped
silently.
"""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from kerneltracer.analysis.timeline.job import TimelineAnalysis
from kerneltracer.core.ops_csv import OPS_CSV, OPS_JSON, read_ops_csv
from kerneltracer.errors import InputFileError
from kerneltracer.inputguard import read_input
from kerneltracer.jsonio import atomic_write_text
from kerneltracer.report.collect import RunData

ANALYSIS = TimelineAnalysis.name
FLEET_CSV = "ops_fleet.csv"
FLEET_COLUMNS = (
    "op",
    "input_shapes",
    "input_dtypes",
    "model",
    "calls",
    "gpu_time_us",
    "share_of_model",
    "achieved_tflops",
    "achieved_tbs",
    "efficiency",
    "bound",
    "device",
)
TOP = 100


@dataclass
class ModelOp:
    """One op signature in one model: sums over its modules and traces."""

    calls: int = 0
    gpu_time_us: float = 0.0
    flops: float = 0.0
    bytes: float = 0.0
    lower_bound_us: float = 0.0  # Σ efficiency × time: the roofline time of the timed rows
    timed_us: float = 0.0  # GPU time of rows with an efficiency
    estimated_us: float = 0.0  # GPU time of rows with FLOPs/bytes estimates
    bound: str | None = None
    device: str | None = None

    def add(self, row: dict[str, Any]) -> None:
        t = row["gpu_time_us"] or 0.0
        self.calls += row["calls"] or 0
        self.gpu_time_us += t
        if row["est_flops"] is not None and row["est_bytes"] is not None:
            self.flops += row["est_flops"]
            self.bytes += row["est_bytes"]
            self.estimated_us += t
        if row["efficiency"] is not None:
            self.lower_bound_us += row["efficiency"] * t
            self.timed_us += t
            self.bound = self.bound or row["bound"]
            self.device = self.device or row["device"]

    @property
    def tflops(self) -> float | None:
        return self.flops / self.estimated_us / 1e6 if self.estimated_us else None

    @property
    def tbs(self) -> float | None:
        return self.bytes / self.estimated_us / 1e6 if self.estimated_us else None

    @property
    def efficiency(self) -> float | None:
        return self.lower_bound_us / self.timed_us if self.timed_us else None


@dataclass
class JobShare:
    model: str
    job: str
    trace: str
    share: float | None
    text: str


@dataclass
class OpsFleetView:
    models: list[str] = field(default_factory=list)
    # (op, shapes, dtypes) -> model -> figures; ordered by total GPU time
    ops: dict[tuple[str, str, str], dict[str, ModelOp]] = field(default_factory=dict)
    model_gpu_us: dict[str, float] = field(default_factory=dict)
    shares: list[JobShare] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def available(self) -> bool:
        return bool(self.shares)

    def total(self, key: tuple[str, str, str]) -> float:
        return sum(m.gpu_time_us for m in self.ops[key].values())


def build_ops_view(run: RunData) -> OpsFleetView:
    view = OpsFleetView()
    ops: dict[tuple[str, str, str], dict[str, ModelOp]] = defaultdict(dict)
    gpu: dict[str, float] = defaultdict(float)
    for job in run.jobs:
        analysis = next((a for a in job.analyses if a.name == ANALYSIS), None)
        if analysis is None or not analysis.done:
            continue
        base = analysis.paths.dir
        for rel in sorted(f for f in analysis.files if Path(f).name == OPS_CSV):
            path = base / rel
            try:
                rows = read_ops_csv(path)
                summary = orjson.loads(read_input(path.parent / OPS_JSON, what="ops summary"))
                if not isinstance(summary, dict):
                    raise ValueError("ops.json is not an object")
            except (InputFileError, OSError, ValueError, KeyError) as exc:
                view.problems.append(f"{job.key}: {rel}: {exc}")
                continue
            trace = str(Path(rel).parent)
            view.shares.append(
                JobShare(
                    job.model,
                    job.key,
                    trace,
                    summary.get("attributed_share"),
                    str(summary.get("text", "")),
                )
            )
            for row in rows:
                gpu[job.model] += row["gpu_time_us"] or 0.0
                if row["kind"] != "op":
                    continue
                key = (row["op"], row["input_shapes"], row["input_dtypes"])
                ops[key].setdefault(job.model, ModelOp()).add(row)
    view.models = sorted(gpu)
    view.model_gpu_us = dict(gpu)
    order = sorted(ops, key=lambda k: -sum(m.gpu_time_us for m in ops[k].values()))
    view.ops = {k: ops[k] for k in order}
    return view


def _fleet_rows(view: OpsFleetView) -> list[dict[str, Any]]:
    out = []
    for (op, shapes, dtypes), per_model in view.ops.items():
        for model, m in sorted(per_model.items()):
            total = view.model_gpu_us.get(model) or 0.0
            out.append(
                {
                    "op": op,
                    "input_shapes": shapes,
                    "input_dtypes": dtypes,
                    "model": model,
                    "calls": m.calls,
                    "gpu_time_us": round(m.gpu_time_us, 3),
                    "share_of_model": round(m.gpu_time_us / total, 6) if total else None,
                    "achieved_tflops": _r(m.tflops),
                    "achieved_tbs": _r(m.tbs),
                    "efficiency": _r(m.efficiency),
                    "bound": m.bound,
                    "device": m.device,
                }
            )
    return out


def write_fleet_csv(view: OpsFleetView, path: Path) -> Path:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=FLEET_COLUMNS, lineterminator="\n")
    w.writeheader()
    for r in _fleet_rows(view):
        w.writerow({k: "" if r[k] is None else r[k] for k in FLEET_COLUMNS})
    atomic_write_text(path, buf.getvalue())
    return path


def _r(x: float | None) -> float | None:
    return None if x is None else float(f"{x:.6g}")
