"""Start/End pairing per (tid, node, event) and the per-thread call tree."""

from __future__ import annotations

from pathlib import Path

from kerneltracer.analysis.records.model import AnomalyKind
from tests.records.logs import analyse_text


def _spans(pd: object) -> list[tuple[int, str | None, str, int, int]]:
    return [(e.tid, e.node_name, e.event, e.start, e.end) for e in pd.event_records]  # type: ignore[attr-defined]


def test_pairs_per_thread_not_per_name(tmp_path: Path) -> None:
    # Two threads run the same op at overlapping times. Pairing by name alone (ada-pa) closes
    # thread 1's Start with thread 2's End.
    a = analyse_text(
        tmp_path,
        """
        100 1 [Add] [OpExecute] Start
        150 2 [Add] [OpExecute] Start
        300 1 [Add] [OpExecute] End
        400 2 [Add] [OpExecute] End
    """,
    )
    pd = a.pds[0]
    assert _spans(pd) == [(1, "Add", "OpExecute", 100, 300), (2, "Add", "OpExecute", 150, 400)]
    assert not pd.anomalies


def test_same_key_nesting_pairs_innermost_first(tmp_path: Path) -> None:
    a = analyse_text(
        tmp_path,
        """
        0 1 UNKNOWN(-1) [Tiling] Start
        10 1 UNKNOWN(-1) [Tiling] Start
        20 1 UNKNOWN(-1) [Tiling] End
        30 1 UNKNOWN(-1) [Tiling] End
    """,
    )
    events = list(a.pds[0].event_records)
    assert [(e.start, e.end, e.parent, e.same_parent, e.nested) for e in events] == [
        (0, 30, -1, -1, 1),
        (10, 20, 0, 0, 0),
    ]


def test_unmatched_start_and_end_are_reported_with_lines(tmp_path: Path) -> None:
    a = analyse_text(
        tmp_path,
        """
        5 1 [A] [E] End
        10 1 [A] [E] Start
        20 1 [A] [E] End
        30 1 [B] [load] Start
    """,
    )
    pd = a.pds[0]
    assert len(pd.event_records) == 1
    kinds = [(x.kind, x.line, x.node_name, x.event) for x in pd.anomalies]
    assert kinds == [
        (AnomalyKind.UNMATCHED_END, 1, "A", "E"),
        (AnomalyKind.UNMATCHED_START, 4, "B", "load"),
    ]


def test_records_out_of_time_order_are_sorted_before_pairing(tmp_path: Path) -> None:
    a = analyse_text(
        tmp_path,
        """
        50 1 [A] [E] End
        10 1 [A] [E] Start
        30 1 UNKNOWN(-1) [F] End
        20 1 UNKNOWN(-1) [F] Start
    """,
    )
    events = list(a.pds[0].event_records)
    assert [(e.event, e.start, e.end, e.parent, e.op) for e in events] == [
        ("E", 10, 50, -1, "A"),
        ("F", 20, 30, 0, "A"),
    ]
    assert not a.pds[0].anomalies


def test_equal_starts_put_the_outer_event_first(tmp_path: Path) -> None:
    # The inner Start is written first; by time the outer one still contains it.
    a = analyse_text(
        tmp_path,
        """
        10 1 UNKNOWN(-1) [Inner] Start
        10 1 [Op] [Outer] Start
        20 1 UNKNOWN(-1) [Inner] End
        40 1 [Op] [Outer] End
    """,
    )
    events = list(a.pds[0].event_records)
    assert [(e.event, e.parent, e.op) for e in events] == [("Outer", -1, "Op"), ("Inner", 0, "Op")]
    assert not a.pds[0].anomalies


def test_threads_and_devices_have_separate_trees(tmp_path: Path) -> None:
    # tid 1 is a real host thread in a container (PID 1); it must not share the device track.
    a = analyse_text(
        tmp_path,
        """
        0 1 [A] [OpExecute] Start
        5 1 [A] [Compute] Start
        8 1 [A] [OpExecute] End
        9 1 [A] [Compute] End
    """,
    )
    pd = a.pds[0]
    assert [(e.device, e.parent) for e in pd.event_records] == [("Host CPU", -1), ("Device", -1)]
    assert not pd.anomalies
