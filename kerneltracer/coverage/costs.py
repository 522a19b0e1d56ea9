"""Estimated cost per op of one job, from its dispatch signatures (``dispatch_ops.jsonl``):
FLOPs, bytes and the roofline time lower bound on one device, summed over calls
(:mod:`kerneltracer.costmodel`). Estimated from shapes, never measured.

An op gets None when any of its signatures has no estimate (an op without a formula, a
symbolic size): a partial sum would read as the whole. A job whose signatures cannot be
read gets no estimates at all (its calls and signature counts come from the summary); its
bad lines are counted by kind (:mod:`kerneltracer.core.dispatch_row`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from kerneltracer.core.artefacts import ArtefactKind
from kerneltracer.core.dispatch_row import BadDispatchRow, DispatchRow, parse_dispatch_line
from kerneltracer.costmodel import INT64_MAX, Device, estimate, roofline
from kerneltracer.coverage.scan import JobRef
from kerneltracer.errors import InputFileError
from kerneltracer.inputguard import read_input


@dataclass(frozen=True, slots=True)
class OpEstimate:
    flops: int
    bytes: int
    time_us: float  # sum of per-call roofline lower bounds


@dataclass
class JobCosts:
    """op -> its estimated totals in one job (None: not estimable), and the lines skipped."""

    ops: dict[str, OpEstimate | None] = field(default_factory=dict)
    bad: Counter[str] = field(default_factory=Counter)  # kind -> bad lines
    path: str = ""  # the signatures file, relative to the job dir ("" when none was read)


def job_op_costs(job: JobRef, device: Device) -> JobCosts:
    """The estimated totals of ``job``'s ops; no estimates without signatures.

    A bad line is counted and makes the estimates of the whole job unknown: its op (maybe
    any op) would be missing calls, and a partial sum would read as the whole.
    """
    out = JobCosts()
    totals: dict[str, list[float] | None] = {}
    for rel in job.artefact_names(ArtefactKind.DISPATCH_SIGNATURES):
        out.path = out.path or rel
        try:
            lines = read_input(
                job.job_dir / rel, what="job output", text=True, gzip=False
            ).splitlines()
        except InputFileError:
            return JobCosts(path=rel)  # coverage reads the summary; the file is not its input
        for line in lines:
            if not line.strip():
                continue
            try:
                row = parse_dispatch_line(line)
            except BadDispatchRow as exc:
                out.bad[exc.kind] += 1
                continue
            _add(totals, row, device)
    if not out.bad:
        out.ops = {
            op: None if t is None or not _fits(t) else OpEstimate(int(t[0]), int(t[1]), t[2])
            for op, t in totals.items()
        }
    return out


def _add(totals: dict[str, list[float] | None], row: DispatchRow, device: Device) -> None:
    cost = estimate(row.op, row.inputs, row.kwargs, row.outputs)
    if cost is None:
        totals[row.op] = None
        return
    acc = totals.setdefault(row.op, [0, 0, 0.0])
    if acc is not None:
        n = row.count
        acc[0] += cost.flops * n
        acc[1] += cost.bytes * n
        acc[2] += roofline(cost, device).time_s * 1e6 * n


def _fits(total: list[float]) -> bool:
    # Totals are int64 columns: a sum beyond them has no honest value to write.
    return total[0] <= INT64_MAX and total[1] <= INT64_MAX
