"""Estimated costs summed per op, per module and per model, on one device.

Input: one :class:`CostedSignature` per unique call signature (its per-call cost, calls per
model, module paths per model). Totals are per-call costs times calls; the time is the sum
of per-call roofline lower bounds. Calls without an estimate are counted in
``unknown_calls`` and listed by op (:class:`UnknownOp`), never added as zero.

Module paths are the innermost module that made the call, with layer / expert indices
folded (``model.layers.*.mlp.down_proj``), so an 80-layer model ranks modules, not layers.
Every call has its path (past a few dozen per signature, recorded already folded: see
:mod:`kerneltracer.core.modulepaths`); calls a row lists no path for (a trace written
before paths were bounded that way, or a hand-made one) are attributed to :data:`UNRECORDED`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from kerneltracer.core.modulepaths import fold_indices
from kerneltracer.costmodel.call import OpCost
from kerneltracer.costmodel.devices import Device
from kerneltracer.costmodel.estimate import is_known
from kerneltracer.costmodel.roofline import COMPUTE, MEMORY, NONE, RooflinePoint, roofline

NO_MODULE = "(no module)"  # the call ran outside every module (a loss in the step, say)
UNRECORDED = "(paths not recorded)"
K = TypeVar("K")


def module_group(path: str) -> str:
    """``model.layers.17.mlp`` -> ``model.layers.*.mlp``; "" -> :data:`NO_MODULE`."""
    return fold_indices(path) if path else NO_MODULE


@dataclass(frozen=True)
class CostedSignature:
    op: str
    cost: OpCost | None  # per call; None: no estimate
    model_calls: Mapping[str, int]
    model_modules: Mapping[str, Mapping[str, int]] = field(default_factory=dict)


@dataclass
class Totals:
    calls: int = 0
    unknown_calls: int = 0  # calls with no estimate: not in the sums below
    flops: int = 0
    bytes: int = 0
    compute_s: float = 0.0
    memory_s: float = 0.0
    time_s: float = 0.0  # sum of per-call roofline time lower bounds

    def add(self, point: PerCall | None, n: int) -> None:
        self.calls += n
        if point is None:
            self.unknown_calls += n
            return
        self.flops += point.flops * n
        self.bytes += point.bytes * n
        self.compute_s += point.compute_s * n
        self.memory_s += point.memory_s * n
        self.time_s += point.time_s * n

    def merge(self, other: Totals) -> None:
        self.calls += other.calls
        self.unknown_calls += other.unknown_calls
        self.flops += other.flops
        self.bytes += other.bytes
        self.compute_s += other.compute_s
        self.memory_s += other.memory_s
        self.time_s += other.time_s

    @property
    def bound(self) -> str:
        """What bounds most of it: compute when its arithmetic takes longer than its bytes."""
        if not self.compute_s and not self.memory_s:
            return NONE
        return COMPUTE if self.compute_s >= self.memory_s else MEMORY


@dataclass(frozen=True)
class UnknownOp:
    op: str
    calls: int
    signatures: int
    models: tuple[str, ...]
    has_formula: bool  # True: known op whose arguments the formula could not read


@dataclass
class CostBreakdown:
    device: str
    by_model: dict[str, Totals] = field(default_factory=dict)
    by_op: dict[tuple[str, str], Totals] = field(default_factory=dict)  # (model, op)
    by_module: dict[tuple[str, str], Totals] = field(default_factory=dict)  # (model, module)
    unknown: list[UnknownOp] = field(default_factory=list)  # most calls first

    def share(self, model: str, totals: Totals) -> float | None:
        """``totals``' share of the model's estimated time; None when the model has none."""
        whole = self.by_model[model].time_s
        return totals.time_s / whole if whole > 0 else None

    def ranked(self, table: dict[tuple[str, str], Totals]) -> list[tuple[str, str, Totals]]:
        """Rows of ``by_op`` / ``by_module``: models in order, most estimated time first."""
        return sorted(
            ((m, k, t) for (m, k), t in table.items()),
            key=lambda r: (r[0], -r[2].time_s, -r[2].flops, -r[2].calls, r[1]),
        )

    def top_ops(self, n: int) -> list[tuple[str, Totals]]:
        """Ops by estimated time summed over models (each model's run counted once)."""
        summed: dict[str, Totals] = {}
        for (_, op), t in self.by_op.items():
            summed.setdefault(op, Totals()).merge(t)
        return sorted(summed.items(), key=lambda kv: (-kv[1].time_s, kv[0]))[: max(n, 0)]


@dataclass(frozen=True, slots=True)
class PerCall:
    """A roofline point's figures, computed once per signature rather than once per use."""

    flops: int
    bytes: int
    compute_s: float
    memory_s: float
    time_s: float

    @classmethod
    def of(cls, p: RooflinePoint) -> PerCall:
        return cls(p.flops, p.bytes, p.compute_s, p.memory_s, p.time_s)


@dataclass
class _Unknown:
    calls: int = 0
    signatures: int = 0
    models: set[str] = field(default_factory=set)


def breakdown(items: Iterable[CostedSignature], device: Device) -> CostBreakdown:
    out = CostBreakdown(device.key)
    unknown: dict[str, _Unknown] = {}
    groups: dict[str, str] = {}  # module path -> its group, folded once per path
    for sig in items:
        point = PerCall.of(roofline(sig.cost, device)) if sig.cost is not None else None
        for model, n in sig.model_calls.items():
            _totals(out.by_model, model).add(point, n)
            _totals(out.by_op, (model, sig.op)).add(point, n)
            for module, calls in _modules(sig.model_modules.get(model, {}), n, groups).items():
                _totals(out.by_module, (model, module)).add(point, calls)
        if point is None:
            entry = unknown.setdefault(sig.op, _Unknown())
            entry.calls += sum(sig.model_calls.values())
            entry.signatures += 1
            entry.models.update(sig.model_calls)
    out.unknown = sorted(
        (
            UnknownOp(op, u.calls, u.signatures, tuple(sorted(u.models)), is_known(op))
            for op, u in unknown.items()
        ),
        key=lambda u: (-u.calls, u.op),
    )
    return out


def _totals(table: dict[K, Totals], key: K) -> Totals:
    found = table.get(key)
    if found is None:
        found = table[key] = Totals()
    return found


def _modules(paths: Mapping[str, int], calls: int, groups: dict[str, str]) -> dict[str, int]:
    """Calls per folded module path; calls beyond the recorded paths go to UNRECORDED."""
    grouped: dict[str, int] = {}
    for path, n in paths.items():
        group = groups.get(path)
        if group is None:
            group = groups[path] = module_group(path)
        grouped[group] = grouped.get(group, 0) + n
    rest = calls - sum(grouped.values())
    if rest > 0:
        grouped[UNRECORDED] = grouped.get(UNRECORDED, 0) + rest
    return grouped
