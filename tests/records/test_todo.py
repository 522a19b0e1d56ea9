"""The seed's TODO / known-issues list, one hand-written log each; each fails on ada-pa."""

from __future__ import annotations

import csv
from pathlib import Path

from kerneltracer.analysis.records.model import AnomalyKind, Attribution
from kerneltracer.analysis.records.reporters import run_reporters
from kerneltracer.analysis.records.summary import summarize
from tests.records.logs import TRANSDATA_ATOMIC, analyse_text, dump


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


# --- nested same events are counted once (事件嵌套的时间统计问题) --------------------------


def test_transdata_tiling_is_two_tilings_of_10us(tmp_path: Path) -> None:
    a = analyse_text(tmp_path, TRANSDATA_ATOMIC)
    rows = {r.event: r for r in summarize(a.pds[0]).rows}
    tiling = rows["Tiling"]
    # ada-pa: 3 tilings, 40 µs, 13.3 µs average.
    assert (tiling.count, tiling.total_ns, tiling.avg_ns, tiling.folded) == (2, 20000, 10000, 1)
    run_reporters(a.pds, tmp_path / "out" / "ge", ["summary"])
    row = next(r for r in _rows(tmp_path / "out" / "ge_summary_0.csv") if r["event"] == "Tiling")
    assert (row["count"], row["avg(us)"], row["total(us)"]) == ("2", "10.000", "20.000")
    assert row["w-percent"] == "0.666667"  # 20 µs over the 30 µs OpExecute total
    assert row["folded"] == "1"


def test_wrapper_overhead_stays_in_the_total(tmp_path: Path) -> None:
    # The outer tiling takes 2 µs more than its parts: total is the covered time (22 µs),
    # still 2 tilings.
    a = analyse_text(
        tmp_path,
        """
        0 1 [T] [Tiling] Start
        1000 1 UNKNOWN(-1) [Tiling] Start
        11000 1 UNKNOWN(-1) [Tiling] End
        11000 1 UNKNOWN(-1) [Tiling] Start
        21000 1 UNKNOWN(-1) [Tiling] End
        22000 1 [T] [Tiling] End
    """,
    )
    (row,) = summarize(a.pds[0]).rows
    assert (row.count, row.total_ns, row.avg_ns) == (2, 22000, 11000)


def test_same_event_in_other_threads_is_not_folded(tmp_path: Path) -> None:
    a = analyse_text(
        tmp_path,
        """
        0 1 [A] [Tiling] Start
        0 2 [B] [Tiling] Start
        10 2 [B] [Tiling] End
        20 1 [A] [Tiling] End
    """,
    )
    (row,) = summarize(a.pds[0]).rows
    assert (row.count, row.total_ns, row.folded) == (2, 30, 0)


# --- crossing ranges in one thread are detected ------------------------------------------


def test_crossing_ranges_are_reported(tmp_path: Path) -> None:
    a = analyse_text(
        tmp_path,
        """
        0 9 [A] [OpExecute] Start
        10 9 [B] [InferShape] Start
        30 9 [A] [OpExecute] End
        50 9 [B] [InferShape] End
        60 9 [C] [OpExecute] Start
        70 9 [C] [OpExecute] End
    """,
    )
    pd = a.pds[0]
    (x,) = pd.anomalies
    assert x.kind is AnomalyKind.CROSSING
    assert (x.line, x.other_line, x.tid, x.node_name, x.event) == (2, 1, 9, "B", "InferShape")
    assert "crosses A@OpExecute [0, 30]" in x.detail
    # B is not a child of A; the walk goes on (C is a top-level event).
    assert [(e.node_name, e.parent) for e in pd.event_records] == [
        ("A", -1), ("B", -1), ("C", -1),
    ]  # fmt: skip
    run_reporters(a.pds, tmp_path / "ge", ["anomalies"])
    (row,) = _rows(tmp_path / "ge_anomalies_0.csv")
    assert (row["kind"], row["line"], row["other_line"]) == ("crossing", "2", "1")


def test_nested_and_disjoint_ranges_are_not_crossing(tmp_path: Path) -> None:
    a = analyse_text(
        tmp_path,
        """
        0 9 [A] [E] Start
        10 9 [B] [F] Start
        20 9 [B] [F] End
        20 9 [C] [F] Start
        30 9 [C] [F] End
        30 9 [A] [E] End
        30 9 [D] [E] Start
        40 9 [D] [E] End
    """,
    )
    assert a.pds[0].anomalies == ()


def test_crossing_in_different_threads_is_fine(tmp_path: Path) -> None:
    a = analyse_text(
        tmp_path,
        """
        0 1 [A] [E] Start
        10 2 [B] [E] Start
        30 1 [A] [E] End
        50 2 [B] [E] End
    """,
    )
    assert a.pds[0].anomalies == ()


# --- atomic KernelLaunch goes to the atomic op --------------------------------------------


def test_atomic_launch_is_charged_to_the_atomic_op(tmp_path: Path) -> None:
    a = analyse_text(tmp_path, TRANSDATA_ATOMIC)
    run_reporters(a.pds, tmp_path / "ge", ["op_statistic"])
    rows = [
        (r["node"], r["event"], r["duration(us)"], r["attribution"], r["wrapper"])
        for r in _rows(tmp_path / "ge_op_statistic_0.csv")
    ]
    assert rows == [
        ("TransData", "OpExecute", "30.000", "own", "0"),
        ("TransData", "Tiling", "20.000", "own", "1"),
        ("TransData", "Tiling", "10.000", "enclosing", "0"),
        ("TransData_AtomicClean", "Tiling", "10.000", "atomic", "0"),
        ("TransData", "KernelLaunch", "5.000", "own", "1"),
        ("TransData_AtomicClean", "KernelLaunch", "3.000", "atomic", "0"),
        ("TransData", "KernelLaunch", "2.000", "enclosing", "0"),
    ]
    # Without the wrappers, TransData has exactly one KernelLaunch (ada-pa charged it two).
    own_launches = [r for r in rows if r[:2] == ("TransData", "KernelLaunch") and r[4] == "0"]
    assert len(own_launches) == 1


def test_explicit_atomic_launch_event_and_its_children(tmp_path: Path) -> None:
    a = analyse_text(
        tmp_path,
        """
        0 1 [Mul] [OpExecute] Start
        10 1 UNKNOWN(-1) [AtomicLaunchKernelWithFlag] Start
        12 1 UNKNOWN(-1) [rtKernelLaunch] Start
        14 1 UNKNOWN(-1) [rtKernelLaunch] End
        20 1 UNKNOWN(-1) [AtomicLaunchKernelWithFlag] End
        30 1 UNKNOWN(-1) [LaunchKernelWithFlag] Start
        40 1 UNKNOWN(-1) [LaunchKernelWithFlag] End
        50 1 [Mul] [OpExecute] End
    """,
    )
    got = [(e.event, e.op, e.attribution) for e in a.pds[0].event_records]
    assert got == [
        ("OpExecute", "Mul", Attribution.OWN),
        ("AtomicLaunchKernelWithFlag", "Mul_AtomicClean", Attribution.ATOMIC),
        ("rtKernelLaunch", "Mul_AtomicClean", Attribution.ATOMIC),
        ("LaunchKernelWithFlag", "Mul", Attribution.ENCLOSING),
    ]


def test_single_inner_launch_is_not_atomic(tmp_path: Path) -> None:
    a = analyse_text(
        tmp_path,
        """
        0 1 [Add] [KernelLaunch] Start
        1 1 UNKNOWN(-1) [KernelLaunch] Start
        5 1 UNKNOWN(-1) [KernelLaunch] End
        6 1 [Add] [KernelLaunch] End
    """,
    )
    assert [e.op for e in a.pds[0].event_records] == ["Add", "Add"]


# --- op_statistic: nearest enclosing named event, one linear pass ---------------------------


def test_unnamed_events_take_the_innermost_named_event(tmp_path: Path) -> None:
    a = analyse_text(
        tmp_path,
        dump("""
        0 1 [Graph] [Execute] Start
        10 1 [Conv] [OpExecute] Start
        11 1 UNKNOWN(-1) [InferShape] Start
        12 1 UNKNOWN(-1) [InferShape] End
        20 1 [Conv] [OpExecute] End
        30 1 UNKNOWN(-1) [Sync] Start
        31 1 UNKNOWN(-1) [Sync] End
        40 1 [Graph] [Execute] End
        50 1 UNKNOWN(-1) [Orphan] Start
        51 1 UNKNOWN(-1) [Orphan] End
    """),
    )
    got = [(e.event, e.op, e.attribution.label) for e in a.pds[0].event_records]
    assert got == [
        ("Execute", "Graph", "own"),
        ("OpExecute", "Conv", "own"),
        ("InferShape", "Conv", "enclosing"),
        ("Sync", "Graph", "enclosing"),
        ("Orphan", None, "none"),
    ]


def test_op_statistic_many_open_named_events(tmp_path: Path) -> None:
    # The shape that makes ada-pa quadratic: many named events in one thread, each followed
    # by unnamed ones (ada-pa rescans every named event seen so far for each unnamed one).
    n = 3000
    lines = []
    for i in range(n):
        t = i * 100
        lines += [
            f"{t} 1 [Op{i}] [OpExecute] Start",
            f"{t + 10} 1 UNKNOWN(-1) [Tiling] Start",
            f"{t + 20} 1 UNKNOWN(-1) [Tiling] End",
            f"{t + 50} 1 [Op{i}] [OpExecute] End",
        ]
    a = analyse_text(tmp_path, "\n".join(lines))
    ops = [e.op for e in a.pds[0].event_records if e.event == "Tiling"]
    assert ops == [f"Op{i}" for i in range(n)]
