"""Reporters: file names, formats, the registry, and that they never change their input."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from kerneltracer.analysis.records.reporters import REPORTERS, reporter_classes, run_reporters
from kerneltracer.analysis.records.reporters.op_statistic import HEADER as OP_HEADER
from kerneltracer.analysis.records.reporters.summary import HEADER as SUMMARY_HEADER
from kerneltracer.errors import UsageError
from tests.records.logs import TRANSDATA_ATOMIC, analyse_text, dump

TWO_DUMPS = "\n".join([
    dump("""
        1000 3 [A] [OpExecute] Start
        1200 3 UNKNOWN(-1) [Tiling] Start
        1700 3 UNKNOWN(-1) [Tiling] End
        1800 3 [A] [Compute] Start
        2600 3 [A] [Compute] End
        3000 3 [A] [OpExecute] End
        3100 3 [B] [OpExecute] Start
    """),
    "stdout between dumps",
    dump("""
        5000 3 [C] [OpExecute] Start
        9000 3 [C] [OpExecute] End
    """),
])  # fmt: skip


def _csv(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def test_file_names_per_type_and_dump(tmp_path: Path) -> None:
    a = analyse_text(tmp_path, TWO_DUMPS)
    written = run_reporters(a.pds, tmp_path / "out" / "ge")
    names = sorted(p.name for p in written)
    assert names == sorted(
        f"ge_{t}_{i}.{ext}"
        for t, ext in [("tracing", "json"), ("summary", "csv"), ("op_statistic", "csv"),
                       ("anomalies", "csv")]
        for i in (0, 1)
    )  # fmt: skip
    # Atomic writes leave no temp files behind, and reports are readable by others.
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == names
    assert all(p.stat().st_mode & 0o044 == 0o044 for p in written)


def test_tracing_is_a_chrome_trace(tmp_path: Path) -> None:
    a = analyse_text(tmp_path, TWO_DUMPS)
    run_reporters(a.pds, tmp_path / "ge", ["tracing"])
    trace = json.loads((tmp_path / "ge_tracing_0.json").read_text())
    assert trace["displayTimeUnit"] == "ns"  # 2 of 3 events last under 1 µs
    assert trace["otherData"]["base_ts_ns"] == 1000
    meta = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M"}
    assert meta == {0: "Host CPU", 1: "Device"}
    complete = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert [(e["name"], e["pid"], e["tid"], e["ts"], e["dur"]) for e in complete] == [
        ("A@OpExecute", 0, 3, 0.0, 2.0),
        ("Tiling", 0, 3, 0.2, 0.5),
        ("A@Compute", 1, 1, 0.8, 0.8),
    ]
    assert complete[1]["args"] == {"op": "A", "attribution": "enclosing"}
    # B never ended: an instant event marks where it started.
    (instant,) = [e for e in trace["traceEvents"] if e["ph"] == "i"]
    assert (instant["name"], instant["ts"], instant["args"]["line"]) == (
        "B@OpExecute (no End)",
        2.1,
        8,
    )


def test_tracing_uses_ns_when_many_events_are_sub_microsecond(tmp_path: Path) -> None:
    a = analyse_text(
        tmp_path,
        """
        0 1 [A] [E] Start
        400 1 [A] [E] End
        500 1 [B] [E] Start
        5000 1 [B] [E] End
    """,
    )
    run_reporters(a.pds, tmp_path / "ge", ["tracing"])
    trace = json.loads((tmp_path / "ge_tracing_0.json").read_text())
    assert trace["displayTimeUnit"] == "ns"
    assert [e["dur"] for e in trace["traceEvents"] if e["ph"] == "X"] == [0.4, 4.5]


def test_tracing_keeps_ns_precision_on_epoch_timestamps(tmp_path: Path) -> None:
    a = analyse_text(
        tmp_path,
        """
        1763790000123456789 1 [A] [E] Start
        1763790000123457790 1 [A] [E] End
    """,
    )
    run_reporters(a.pds, tmp_path / "ge", ["tracing"])
    trace = json.loads((tmp_path / "ge_tracing_0.json").read_text())
    (ev,) = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert (ev["ts"], ev["dur"]) == (0.0, 1.001)
    assert trace["displayTimeUnit"] == "ms"
    assert trace["otherData"]["base_ts_ns"] == 1763790000123456789


def test_summary_and_op_statistic_csv(tmp_path: Path) -> None:
    a = analyse_text(tmp_path, TWO_DUMPS)
    run_reporters(a.pds, tmp_path / "ge", ["summary", "op_statistic"])
    summary = _csv(tmp_path / "ge_summary_0.csv")
    assert tuple(summary[0]) == SUMMARY_HEADER
    assert summary[0][:5] == ["event", "count", "avg(us)", "total(us)", "w-percent"]
    # Host events only (the device Compute is in tracing and op_statistic).
    assert summary[1:] == [
        ["OpExecute", "1", "2.000", "2.000", "1.000000", "0"],
        ["Tiling", "1", "0.500", "0.500", "0.250000", "0"],
    ]
    ops = _csv(tmp_path / "ge_op_statistic_0.csv")
    assert tuple(ops[0]) == OP_HEADER and ops[0][:3] == ["node", "event", "duration(us)"]
    assert ops[1:] == [
        ["A", "OpExecute", "2.000", "0.000", "3", "Host CPU", "own", "0"],
        ["A", "Tiling", "0.500", "0.200", "3", "Host CPU", "enclosing", "0"],
        ["A", "Compute", "0.800", "0.800", "1", "Device", "own", "0"],
    ]
    assert _csv(tmp_path / "ge_summary_1.csv")[1] == [
        "OpExecute",
        "1",
        "4.000",
        "4.000",
        "1.000000",
        "0",
    ]


def test_reporters_never_change_their_input(tmp_path: Path) -> None:
    a = analyse_text(tmp_path, TWO_DUMPS + "\n" + TRANSDATA_ATOMIC)
    pds = list(a.pds)
    before = [pd.fingerprint() for pd in pds]
    rows_before = [list(pd.event_records) for pd in pds]
    for name in REPORTERS:
        run_reporters(pds, tmp_path / name, [name])
    assert [pd.fingerprint() for pd in pds] == before
    assert [list(pd.event_records) for pd in pds] == rows_before
    assert pds == list(a.pds)
    # The columns handed out are read-only views.
    col = pds[0].event_records.column("start")
    with pytest.raises(TypeError):
        col[0] = 0


def test_registry_validates_names_and_lists_choices() -> None:
    assert [c.name for c in reporter_classes(["summary", "tracing", "summary"])] == [
        "summary", "tracing",
    ]  # fmt: skip
    with pytest.raises(UsageError, match=r"unknown reporter.*nope.*valid: anomalies, op_statistic"):
        reporter_classes(["summary", "nope"])
    assert all(REPORTERS[name].name == name for name in REPORTERS)
