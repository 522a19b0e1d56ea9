"""Estimated cost per op of one job, from its dispatch signatures (``dispatch_ops.jsonl``):
FLOPs, bytes and the roofline time lower bound on one device, summed over calls
(:mod:`kerneltracer.costmodel`). Estimated from shapes, never measured.

An op gets None when any of its signatures has no estimate (an op without a formula, a
symbolic size): a partial sum would read as the whole. A job whose signatures cannot be
read gets no estimates at all (its calls and signature counts come from the summary).
"""

from __future__ import annotations

from dataclasses import dataclass

import orjson

from kerneltracer.core.artefacts import ArtefactKind
from kerneltracer.costmodel import Device, estimate, roofline
from kerneltracer.coverage.scan import JobRef
from kerneltracer.errors import InputFileError
from kerneltracer.inputguard import read_input


@dataclass(frozen=True, slots=True)
class OpEstimate:
    flops: int
    bytes: int
    time_us: float  # sum of per-call roofline lower bounds


def job_op_costs(job: JobRef, device: Device) -> dict[str, OpEstimate | None]:
    """op -> its estimated totals in this job (None: not estimable); {} without signatures."""
    totals: dict[str, list[float] | None] = {}
    for rel in job.artefact_names(ArtefactKind.DISPATCH_SIGNATURES):
        try:
            lines = read_input(
                job.job_dir / rel, what="job output", text=True, gzip=False
            ).splitlines()
        except InputFileError:
            return {}
        for line in lines:
            if not line.strip():
                continue
            try:
                row = orjson.loads(line)
                op, n = str(row["op"]), int(row["count"])
                cost = estimate(op, row["inputs"], row.get("kwargs") or {}, row["outputs"])
            except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
                return {}  # a row we cannot attribute to an op: no estimate is honest
            if cost is None:
                totals[op] = None
                continue
            acc = totals.setdefault(op, [0, 0, 0.0])
            if acc is not None:
                acc[0] += cost.flops * n
                acc[1] += cost.bytes * n
                acc[2] += roofline(cost, device).time_s * 1e6 * n
    return {
        op: None if t is None else OpEstimate(int(t[0]), int(t[1]), t[2])
        for op, t in totals.items()
    }
