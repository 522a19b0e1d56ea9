"""Parsing: record fields, dump blocks, and bad lines counted with their line numbers."""

from __future__ import annotations

from pathlib import Path

from kerneltracer.analysis.records import analyse
from kerneltracer.analysis.records.model import DEV_DEVICE, DEV_HOST_CPU, DEVICE_TID, AnomalyKind
from kerneltracer.analysis.records.parser import MAX_DETAILS
from tests.records.logs import analyse_text, dump, write_log


def test_seed_example_records_and_event(tmp_path: Path) -> None:
    a = analyse_text(
        tmp_path,
        """
        10000 122080 [GatherV2] [ConstPrepare] Start
        50000 122080 [GatherV2] [ConstPrepare] End
    """,
    )
    assert a.bad_count == 0 and len(a.pds) == 1
    pd = a.pds[0]
    recs = list(pd.records)
    assert [(r.timestamp, r.tid, r.node_name, r.event, r.et) for r in recs] == [
        (10000, 122080, "GatherV2", "ConstPrepare", "Start"),
        (50000, 122080, "GatherV2", "ConstPrepare", "End"),
    ]
    assert recs[0].device == DEV_HOST_CPU and recs[1].line == 2
    (ev,) = list(pd.event_records)
    assert (ev.node_name, ev.event, ev.start, ev.end, ev.duration) == (
        "GatherV2", "ConstPrepare", 10000, 50000, 40000,
    )  # fmt: skip
    assert (ev.start_line, ev.end_line, ev.parent, ev.same_parent) == (1, 2, -1, -1)


def test_unknown_node_is_none_and_compute_goes_to_device(tmp_path: Path) -> None:
    a = analyse_text(
        tmp_path,
        dump("""
        100 5 UNKNOWN(-1) [Tiling] Start
        200 5 UNKNOWN(-1) [Tiling] End
        300 5 [Add] [Compute] Start
        900 6 [Add] [Compute] End
        400 5 [Add] UNKNOWN(7) Start
        500 5 [Add] UNKNOWN(7) End
    """),
    )
    pd = a.pds[0]
    events = {e.event: e for e in pd.event_records}
    assert events["Tiling"].node_name is None
    # A device event's Start and End may be seen by different host threads; they still pair.
    assert events["Compute"].device == DEV_DEVICE and events["Compute"].tid == DEVICE_TID
    assert events["Compute"].duration == 600
    assert events["UNKNOWN(7)"].node_name == "Add"
    assert pd.version == "1.0" and not pd.anomalies


def test_bad_lines_are_counted_with_line_numbers(tmp_path: Path) -> None:
    a = analyse_text(
        tmp_path,
        """
        100 1 [A] [E] Start
        not a record
        12x 1 [A] [E] Start
        100 1 A [E] Start
        100 1 [A] [E] Begin
        100 -1 [A] [E] Start
        200 1 [A] [E] End
        100 1 [A] [E] Start extra
    """,
    )
    assert a.bad_count == 6
    assert [b.line for b in a.bad_lines] == [2, 3, 4, 5, 6, 8]
    reasons = [b.reason for b in a.bad_lines]
    assert "expected 5 space-separated fields, got 3" in reasons[0]
    assert "timestamp" in reasons[1]
    assert "node" in reasons[2]
    assert "neither Start nor End" in reasons[3]
    assert "thread id" in reasons[4]
    assert "got 6" in reasons[5]
    assert len(a.pds) == 1 and len(a.pds[0].event_records) == 1


def test_dumps_split_into_profiling_data_and_other_output_is_ignored(tmp_path: Path) -> None:
    text = "\n".join([
        "training step 1 loss=3.2",
        dump("1 1 [A] [OpExecute] Start\n5 1 [A] [OpExecute] End"),
        "some other output",
        "42 is the answer",
        dump("7 1 [B] [OpExecute] Start\n9 1 [B] [OpExecute] End"),
    ])  # fmt: skip
    a = analyse_text(tmp_path, text)
    assert a.bad_count == 0 and a.ignored_lines == 3
    assert [pd.index for pd in a.pds] == [0, 1]
    assert [e.node_name for pd in a.pds for e in pd.event_records] == ["A", "B"]
    assert [r.iteration for pd in a.pds for r in pd.records] == ["0", "0", "1", "1"]


def test_non_record_line_inside_a_dump_is_bad(tmp_path: Path) -> None:
    a = analyse_text(tmp_path, dump("1 1 [A] [E] Start\ngarbage here\n5 1 [A] [E] End"))
    assert a.bad_count == 1 and a.bad_lines[0].line == 3


def test_dump_problems_are_anomalies(tmp_path: Path) -> None:
    text = "\n".join([
        "Profiler version: 2.0, dump start, records num: 5",
        "1 1 [A] [E] Start", "2 1 [A] [E] End",
        "Profiling dump end",
        "Profiler version: 2.0, dump start, records num: 2",
        "3 1 [A] [E] Start",  # the output was cut here
    ])  # fmt: skip
    a = analyse_text(tmp_path, text)
    first, second = a.pds
    assert first.count(AnomalyKind.DUMP) == 1
    assert "declares 5 records, found 2" in first.anomalies[0].detail
    details = [x.detail for x in second.anomalies if x.kind is AnomalyKind.DUMP]
    assert any("declares 2 records, found 1" in d for d in details)
    assert any("no 'Profiling dump end'" in d for d in details)
    assert second.count(AnomalyKind.UNMATCHED_START) == 1


def test_crlf_blank_lines_and_utf8_names(tmp_path: Path) -> None:
    path = tmp_path / "w.log"
    path.write_bytes("1 1 [卷积] [E] Start\r\n\r\n2 1 [卷积] [E] End\r\n".encode())
    a = analyse(path)
    assert a.bad_count == 0
    assert [e.node_name for e in a.pds[0].event_records] == ["卷积"]


def test_bad_line_details_are_capped_but_counted(tmp_path: Path) -> None:
    n = MAX_DETAILS + 50
    path = write_log(tmp_path, "\n".join(["1 1 [A] [E] Start", *["junk"] * n, "2 1 [A] [E] End"]))
    a = analyse(path)
    assert a.bad_count == n and len(a.bad_lines) == MAX_DETAILS
    assert a.bad_lines[0].line == 2


def test_empty_file_has_no_dump(tmp_path: Path) -> None:
    a = analyse(write_log(tmp_path, "\n"))
    assert a.pds == () and a.bad_count == 0
