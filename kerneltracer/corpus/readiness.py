"""Backend readiness: per model, every op the target lacks; and which ops to add first.

The ranking is a greedy plan: at each step, take the missing op that makes the most models
fully supported now; ties go to the op that removes the largest share of models' remaining
blockers (a model missing k ops gives each 1/k), then to the most time (calls x time per
call: replayed when a replay is given, else estimated from shapes), then to the most calls.
Read top down, it is an order to implement ops in, with how many models are ready after
each one. ``Readiness.time_weight`` says which time weighs the ops.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kerneltracer.corpus.model import Signature
from kerneltracer.corpus.support import Support

REPLAY = "replay"  # measured: `kerneltracer replay`'s median time per call
ESTIMATE = "estimate"  # estimated from shapes: roofline time lower bound on a device
_NO_TIME = "none"


@dataclass(frozen=True)
class Blocker:
    op: str
    calls: int
    est_time_us: float | None


@dataclass(frozen=True)
class RankedOp:
    rank: int
    op: str
    models_blocked: tuple[str, ...]  # every model that uses the op
    unblocks_alone: int  # models for which it is the only missing op
    newly_ready: int  # models ready once this op and every op ranked above it are added
    ready_after: int  # models ready in total after this step
    calls: int
    est_time_us: float | None


@dataclass
class Readiness:
    support: str
    models: tuple[str, ...]
    blockers: dict[str, list[Blocker]]  # model -> missing ops, most calls first
    ranked: list[RankedOp] = field(default_factory=list)
    ops_checked: int = 0
    time_weight: str = _NO_TIME  # where est_time_us comes from: REPLAY, ESTIMATE or _NO_TIME
    time_note: str = ""  # the same for people: "roofline lower bound on H100, ..."

    @property
    def ready_models(self) -> list[str]:
        return [m for m in self.models if not self.blockers.get(m)]


def assess(
    sigs: list[Signature],
    support: Support,
    models: tuple[str, ...] | None = None,
    time_us: dict[str, float] | None = None,
    time_weight: str | None = None,
    time_note: str = "",
) -> Readiness:
    """``time_us``: time per call by signature id, to weight ops by time; ``time_weight``
    says what it is (:data:`REPLAY`, the default with times, or :data:`ESTIMATE`)."""
    models = models if models is not None else tuple(sorted({m for s in sigs for m in s.models}))
    ops = sorted({s.op for s in sigs})
    missing = {op for op in ops if not support.supports(op)}
    calls: dict[tuple[str, str], int] = {}
    times: dict[tuple[str, str], float] = {}
    for s in sigs:
        if s.op not in missing:
            continue
        for model, n in s.model_calls.items():
            calls[(model, s.op)] = calls.get((model, s.op), 0) + n
            if time_us and s.sig_id in time_us:
                times[(model, s.op)] = times.get((model, s.op), 0.0) + n * time_us[s.sig_id]
    blockers: dict[str, list[Blocker]] = {m: [] for m in models}
    for (model, op), n in calls.items():
        blockers.setdefault(model, []).append(Blocker(op, n, times.get((model, op))))
    for items in blockers.values():
        items.sort(key=lambda b: (-b.calls, b.op))
    weight = time_weight or (REPLAY if time_us else _NO_TIME)
    result = Readiness(
        support.source,
        models,
        blockers,
        ops_checked=len(ops),
        time_weight=weight,
        time_note=time_note,
    )
    result.ranked = _rank(blockers, calls, times)
    return result


def _rank(
    blockers: dict[str, list[Blocker]],
    calls: dict[tuple[str, str], int],
    times: dict[tuple[str, str], float],
) -> list[RankedOp]:
    remaining = {m: {b.op for b in bs} for m, bs in blockers.items() if bs}
    users: dict[str, set[str]] = {}
    for model, ops in remaining.items():
        for op in ops:
            users.setdefault(op, set()).add(model)
    op_calls = {op: sum(calls[(m, op)] for m in ms) for op, ms in users.items()}
    op_time = {
        op: sum(times[(m, op)] for m in ms if (m, op) in times)
        if any((m, op) in times for m in ms)
        else None
        for op, ms in users.items()
    }
    alone = {op: sum(1 for m in ms if remaining[m] == {op}) for op, ms in users.items()}
    ready = sum(1 for bs in blockers.values() if not bs)
    ranked: list[RankedOp] = []
    todo = set(users)
    while todo:

        def score(op: str) -> tuple[int, float, float, int, str]:
            now = sum(1 for m in users[op] if remaining[m] == {op})
            credit = sum(1 / len(remaining[m]) for m in users[op])
            return (-now, -credit, -(op_time[op] or 0.0), -op_calls[op], op)

        best = min(todo, key=score)
        newly = -score(best)[0]
        ready += newly
        for m in users[best]:
            remaining[m].discard(best)
        todo.discard(best)
        ranked.append(
            RankedOp(
                rank=len(ranked) + 1,
                op=best,
                models_blocked=tuple(sorted(users[best])),
                unblocks_alone=alone[best],
                newly_ready=newly,
                ready_after=ready,
                calls=op_calls[best],
                est_time_us=op_time[best],
            )
        )
    return ranked
