"""Damaged record logs: the parser never crashes and counts every bad line by kind.

There are no GE record logs in the shared test data, so the base log is a well-formed
synthetic phase log (nested Start/End pairs on two threads); each example breaks some of
its lines in known ways, and a second property feeds arbitrary text.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kerneltracer.analysis.records import analyse
from kerneltracer.analysis.records.parser import parse_log
from kerneltracer.errors import InputFileError
from kerneltracer.inputguard import binary_without_lines
from tests.helpers import kt

_SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _base_lines() -> list[str]:
    lines = []
    t = 1000
    for i in range(60):
        tid = 1 + i % 2
        lines.append(f"{t} {tid} [op{i % 7}] [OpExecute] Start")
        lines.append(f"{t + 5} {tid} [op{i % 7}] [Tiling] Start")
        lines.append(f"{t + 9} {tid} [op{i % 7}] [Tiling] End")
        lines.append(f"{t + 20} {tid} [op{i % 7}] [OpExecute] End")
        t += 30
    return lines


_BREAKS = {
    "field_count": lambda parts: [*parts, "extra"],
    "timestamp": lambda parts: ["12x", *parts[1:]],
    "thread_id": lambda parts: [parts[0], "-1", *parts[2:]],
    "node": lambda parts: [*parts[:2], "node", *parts[3:]],
    "event": lambda parts: [*parts[:3], "UNKNOWN(x)", parts[4]],
    "phase": lambda parts: [*parts[:4], "Begin"],
}


def _analyse_text(text: str) -> object:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "phases.log"
        path.write_text(text, encoding="utf-8")
        return analyse(path)


@_SETTINGS
@given(data=st.data())
def test_every_broken_line_is_counted_by_kind(data: st.DataObject) -> None:
    lines = _base_lines()
    picks = data.draw(
        st.lists(st.integers(0, len(lines) - 1), min_size=1, max_size=10, unique=True)
    )
    expected: dict[str, int] = {}
    for i in picks:
        kind = data.draw(st.sampled_from(sorted(_BREAKS)))
        lines[i] = " ".join(_BREAKS[kind](lines[i].split()))
        expected[kind] = expected.get(kind, 0) + 1
    a = _analyse_text("\n".join(lines) + "\n")
    assert a.bad_kinds == expected  # type: ignore[attr-defined]
    assert a.bad_count == len(picks)  # type: ignore[attr-defined]
    assert sorted(b.line for b in a.bad_lines) == sorted(i + 1 for i in picks)  # type: ignore[attr-defined]


@_SETTINGS
@given(text=st.text(max_size=400))
@example(text="\x00")  # binary without a line break: refused, not parsed
@example(text="\x00\nphase")
def test_arbitrary_text_never_crashes_and_counts_add_up(text: str) -> None:
    data = text.encode("utf-8", "surrogatepass")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "any.log"
        path.write_bytes(data)
        if binary_without_lines(data):  # the input guard's one refusal of text
            with pytest.raises(InputFileError, match="binary data with no line break"):
                parse_log(path)
            return
        parsed = parse_log(path)
    assert sum(parsed.bad_kinds.values()) == parsed.bad_count
    records = sum(len(d) for d in parsed.dumps)
    assert records + parsed.bad_count + parsed.ignored_lines <= max(parsed.lines, 0) + 1


def test_cli_reports_kinds_and_strict_fails(tmp_path: Path) -> None:
    lines = _base_lines()
    lines[3] = "oops"
    log = tmp_path / "phases.log"
    log.write_text("\n".join(lines) + "\n")
    proc = kt("records", str(log), "-o", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    assert "1 bad line(s) discarded (1 field_count)" in proc.stderr
    strict = kt("records", "--strict", str(log), "-o", str(tmp_path / "strict"))
    assert strict.returncode == 1
    assert not (tmp_path / "strict").exists()
