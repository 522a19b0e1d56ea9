"""Decide which op (node) each event is charged to, in linear time.

A named event belongs to its own node. An unnamed one (``UNKNOWN(n)``) belongs to the nearest
enclosing named event -- which is what ada-pa's op_statistic did with a quadratic scan.

The atomic case (a known gap in ada-pa): an op that needs an atomic clean does its work twice
inside one wrapper of the same kind. Its Tiling wrapper holds the op's own tiling then the atomic
tiling; its KernelLaunch wrapper holds the atomic launch *first*, then the op's own. Charging
both inner launches to the op doubles its KernelLaunch and hides the atomic op, so when a
named wrapper holds exactly two unnamed events of its kind, the atomic one is charged to
``<node>_AtomicClean`` (GE's name for that node). Explicit atomic launch events
(``AtomicLaunchKernelWithFlag``...) are always charged to the atomic op. Unnamed events
inside an atomic event inherit its attribution.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass

from kerneltracer.analysis.records.model import NO_NAME, Attribution
from kerneltracer.analysis.records.nesting import Nesting
from kerneltracer.analysis.records.pairing import PairedEvents


@dataclass(frozen=True)
class AtomicRules:
    # Wrappers whose FIRST inner event is the atomic op's (the atomic kernel runs first).
    launch_events: frozenset[str] = frozenset(
        {"KernelLaunch", "LaunchKernelWithFlag", "LaunchKernelWithHandle"}
    )
    # Wrappers whose SECOND inner event is the atomic op's (own tiling, then the atomic's).
    tiling_events: frozenset[str] = frozenset({"Tiling"})
    explicit_atomic_events: frozenset[str] = frozenset(
        {"AtomicLaunchKernelWithFlag", "AtomicLaunchKernelWithHandle"}
    )
    suffix: str = "_AtomicClean"


@dataclass
class Attributed:
    op: array[int]
    attribution: array[int]


def attribute(
    ev: PairedEvents, nest: Nesting, names: list[str], rules: AtomicRules | None = None
) -> Attributed:
    """Charge every event to an op. May append ``<node>_AtomicClean`` names to ``names``."""
    rules = rules or AtomicRules()
    ids = {name: i for i, name in enumerate(names)}

    def atomic_id(node_id: int) -> int:
        name = names[node_id] + rules.suffix
        if name not in ids:
            ids[name] = len(names)
            names.append(name)
        return ids[name]

    launch = {ids[n] for n in rules.launch_events if n in ids}
    tiling = {ids[n] for n in rules.tiling_events if n in ids}
    explicit = {ids[n] for n in rules.explicit_atomic_events if n in ids}
    node, kind, parent = ev.node, ev.event, nest.parent

    override: dict[int, int] = {}
    for w, children in nest.pairs.items():
        if len(children) != 2 or node[w] == NO_NAME:
            continue
        first, second = children
        if node[first] != NO_NAME or node[second] != NO_NAME:
            continue
        if kind[w] in launch:
            override[first] = atomic_id(node[w])
        elif kind[w] in tiling:
            override[second] = atomic_id(node[w])

    n = len(ev)
    op = array("i", bytes(4 * n))
    how = array("b", bytes(n))
    own, enclosing, atomic, none = (
        Attribution.OWN, Attribution.ENCLOSING, Attribution.ATOMIC, Attribution.NONE,
    )  # fmt: skip
    for i in range(n):
        if node[i] != NO_NAME:
            op[i], how[i] = node[i], own
            continue
        if i in override:
            op[i], how[i] = override[i], atomic
            continue
        p = parent[i]
        if p < 0 or op[p] == NO_NAME:
            op[i], how[i] = NO_NAME, none
        elif kind[i] in explicit and how[p] != atomic:
            op[i], how[i] = atomic_id(op[p]), atomic
        else:
            op[i], how[i] = op[p], (atomic if how[p] == atomic else enclosing)
    return Attributed(op, how)
