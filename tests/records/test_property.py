"""Property: for random well-nested logs, summary totals equal the sum of exclusive times.

"Exclusive" is relative to nested events of the same kind (what the summary folds): an
event's duration minus the durations of its nearest same-kind descendants. The test computes
it from the generated trees, and also checks the total against an independent oracle: the
length of the union of that kind's intervals, thread by thread.
"""

from __future__ import annotations

import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from kerneltracer.analysis.records import analyse
from kerneltracer.analysis.records.summary import summarize

KINDS = ("Tiling", "KernelLaunch", "InferShape")
NODES = (None, "Add", "Conv")


@dataclass
class Node:
    kind: str
    node: str | None
    lead: int  # time before the first child
    tail: int  # time after the last child (≥ 1 for a leaf)
    gaps: list[int]
    children: list[Node] = field(default_factory=list)
    start: int = 0
    end: int = 0


def trees(depth: int = 3) -> st.SearchStrategy[Node]:
    leaf = st.builds(
        Node,
        kind=st.sampled_from(KINDS),
        node=st.sampled_from(NODES),
        lead=st.integers(0, 3000),
        tail=st.integers(1, 3000),
        gaps=st.just([]),
    )
    if depth == 0:
        return leaf

    @st.composite
    def inner(draw: st.DrawFn) -> Node:
        children = draw(st.lists(trees(depth - 1), min_size=1, max_size=3))
        return Node(
            kind=draw(st.sampled_from(KINDS)),
            node=draw(st.sampled_from(NODES)),
            lead=draw(st.integers(0, 3000)),
            tail=draw(st.integers(0, 3000)),
            gaps=draw(
                st.lists(st.integers(0, 500), min_size=len(children), max_size=len(children))
            ),
            children=children,
        )

    return st.one_of(leaf, inner())


def layout(n: Node, t: int, out: list[tuple[int, int, str]], tid: int) -> int:
    """Give ``n`` times from ``t``; append its records; return its end."""
    n.start = t
    name = f"[{n.node}]" if n.node else "UNKNOWN(-1)"
    out.append((t, len(out), f"{t} {tid} {name} [{n.kind}] Start"))
    t += n.lead
    for gap, child in zip(n.gaps, n.children, strict=True):
        t = layout(child, t + gap, out, tid)
    t += n.tail
    n.end = t
    out.append((t, len(out), f"{t} {tid} {name} [{n.kind}] End"))
    return t


def walk(n: Node) -> list[Node]:
    return [n, *(d for c in n.children for d in walk(c))]


def nearest_same(n: Node, kind: str) -> list[Node]:
    found = []
    for c in n.children:
        found += [c] if c.kind == kind else nearest_same(c, kind)
    return found


def union_length(spans: list[tuple[int, int]]) -> int:
    total, cur_s, cur_e = 0, None, None
    for s, e in sorted(spans):
        if cur_e is None or s > cur_e:
            if cur_e is not None and cur_s is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None and cur_s is not None:
        total += cur_e - cur_s
    return total


@settings(max_examples=150, deadline=None)
@given(forests=st.lists(st.lists(trees(), min_size=1, max_size=4), min_size=1, max_size=3))
def test_summary_totals_are_sums_of_exclusive_times(forests: list[list[Node]]) -> None:
    lines: list[tuple[int, int, str]] = []
    roots_by_tid: dict[int, list[Node]] = {}
    for tid, forest in enumerate(forests, start=100):
        t = 1_000_000
        for root in forest:
            t = layout(root, t + 10, lines, tid) + 10
        roots_by_tid[tid] = forest
    lines.sort()  # threads interleave by time; each thread's own order is kept
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "nested.log"
        path.write_text("\n".join(text for _, _, text in lines) + "\n", encoding="utf-8")
        analysis = analyse(path)
    (pd,) = analysis.pds
    assert analysis.bad_count == 0 and pd.anomalies == ()

    exclusive: dict[str, int] = defaultdict(int)
    leaves: dict[str, int] = defaultdict(int)
    union: dict[str, int] = defaultdict(int)
    for roots in roots_by_tid.values():
        nodes = [n for r in roots for n in walk(r)]
        for n in nodes:
            inner = nearest_same(n, n.kind)
            exclusive[n.kind] += (n.end - n.start) - sum(c.end - c.start for c in inner)
            leaves[n.kind] += 0 if inner else 1
        for kind in KINDS:
            union[kind] += union_length([(n.start, n.end) for n in nodes if n.kind == kind])

    rows = {r.event: r for r in summarize(pd).rows}
    assert set(rows) == set(exclusive)
    for kind, row in rows.items():
        assert row.total_ns == exclusive[kind] == union[kind]
        assert row.count == leaves[kind]
    assert len(pd.event_records) == sum(len(walk(r)) for rs in roots_by_tid.values() for r in rs)
