"""The TODO logs really discriminate: ada-pa's algorithm gets each of them wrong."""

from __future__ import annotations

from pathlib import Path

from tests.records.logs import TRANSDATA_ATOMIC, write_log
from tests.records.naive import naive_events, naive_op_statistic, naive_summary


def test_naive_counts_the_transdata_tiling_three_times(tmp_path: Path) -> None:
    summary = naive_summary(naive_events(write_log(tmp_path, TRANSDATA_ATOMIC)))
    assert summary["Tiling"] == (3, 40.0)  # the seed's "3 tilings, 40 µs, 13.3 µs"


def test_naive_charges_both_launches_to_the_parent(tmp_path: Path) -> None:
    rows = naive_op_statistic(naive_events(write_log(tmp_path, TRANSDATA_ATOMIC)))
    assert rows.count(("TransData", "KernelLaunch")) == 3
    assert all(node == "TransData" for node, _ in rows)


def test_naive_nests_crossing_ranges_silently(tmp_path: Path) -> None:
    log = write_log(
        tmp_path,
        """
        0 9 [A] [OpExecute] Start
        10 9 UNKNOWN(-1) [InferShape] Start
        30 9 [A] [OpExecute] End
        50 9 UNKNOWN(-1) [InferShape] End
    """,
    )
    # No anomaly exists in ada-pa's model; the crossing event is simply charged to A.
    assert naive_op_statistic(naive_events(log)) == [("A", "OpExecute"), ("A", "InferShape")]


def test_naive_pairs_across_threads(tmp_path: Path) -> None:
    log = write_log(
        tmp_path,
        """
        100 1 [Add] [OpExecute] Start
        150 2 [Add] [OpExecute] Start
        300 1 [Add] [OpExecute] End
        400 2 [Add] [OpExecute] End
    """,
    )
    # Thread 1's End closes thread 2's Start: both spans come out wrong.
    spans = sorted((e.tid, e.start, e.end) for e in naive_events(log))
    assert spans == [(1, 100, 400), (2, 150, 300)]
