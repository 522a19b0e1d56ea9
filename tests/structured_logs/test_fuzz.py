"""Random damage never crashes the parser, and every bad line is counted."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kerneltracer.analysis.structured_logs.parser import LogParser, parse_log
from kerneltracer.analysis.structured_logs.records import _last_boundary, iter_records
from kerneltracer.analysis.structured_logs.stats import ParseStats
from kerneltracer.errors import InputFileError
from kerneltracer.inputguard import binary_without_lines

_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def log_lines(testdata_dir: Path) -> list[bytes]:
    return (testdata_dir / "tlparse" / "comp_failure.log").read_bytes().splitlines(keepends=True)


def _parse(data: bytes, chunk: int = 1 << 20) -> ParseStats:
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "log"
        src.write_bytes(data)
        parser = LogParser(Path(tmp) / "inter")
        for rec in iter_records(src, chunk_size=chunk):
            parser.feed(rec)
        parser.finish(src, "sha256:" + "0" * 64)
        return parser.stats


def _baseline(lines: list[bytes]) -> ParseStats:
    return _parse(b"".join(lines))


# Garbage that is neither a glog line nor a payload line (no leading tab, no newline).
_garbage = st.binary(min_size=1, max_size=80).filter(
    lambda b: b"\n" not in b and b"\r" not in b and not b.startswith(b"\t") and b"] " not in b
)


@_SETTINGS
@given(data=st.data())
def test_garbage_lines_are_each_counted_as_glog_failures(
    log_lines: list[bytes], data: st.DataObject
) -> None:
    base = _baseline(log_lines)
    lines = list(log_lines)
    garbage = data.draw(st.lists(_garbage, min_size=1, max_size=5))
    # Insert before glog lines only, so no payload is split by the garbage.
    heads = [i for i, line in enumerate(lines) if not line.startswith(b"\t")]
    for g in garbage:
        at = data.draw(st.sampled_from(heads))
        lines.insert(at, g + b"\n")
        heads = [i for i, line in enumerate(lines) if not line.startswith(b"\t")]
    stats = _parse(b"".join(lines))
    assert stats.fail_glog == base.fail_glog + len(garbage)
    assert stats.ok == base.ok


@_SETTINGS
@given(data=st.data())
def test_removed_payload_line_is_an_md5_failure(
    log_lines: list[bytes], data: st.DataObject
) -> None:
    base = _baseline(log_lines)
    payload_lines = [i for i, line in enumerate(log_lines) if line.startswith(b"\t")]
    drop = data.draw(st.sampled_from(payload_lines))
    stats = _parse(b"".join(log_lines[:drop] + log_lines[drop + 1 :]))
    assert stats.fail_payload_md5 == base.fail_payload_md5 + 1
    assert stats.ok == base.ok


@_SETTINGS
@given(data=st.data())
def test_corrupted_envelope_json_is_counted(log_lines: list[bytes], data: st.DataObject) -> None:
    base = _baseline(log_lines)
    heads = [i for i, ln in enumerate(log_lines) if b"] {" in ln and b'] {"str"' not in ln]
    at = data.draw(st.sampled_from(heads))
    lines = list(log_lines)
    lines[at] = lines[at].replace(b"] {", b"] {{", 1)
    stats = _parse(b"".join(lines))
    assert stats.fail_json == base.fail_json + 1
    assert stats.ok == base.ok - 1
    # Like tlparse, the payload lines of an unreadable envelope are stray lines.
    orphans = 0
    while at + 1 + orphans < len(lines) and lines[at + 1 + orphans].startswith(b"\t"):
        orphans += 1
    assert stats.fail_glog == base.fail_glog + orphans


@_SETTINGS
@example(cut=0, chunk=1, noise=b"\x00")
@given(
    cut=st.integers(min_value=0),
    chunk=st.integers(min_value=1, max_value=4096),
    noise=st.binary(max_size=200),
)
def test_truncation_and_noise_never_crash(
    log_lines: list[bytes], cut: int, chunk: int, noise: bytes
) -> None:
    data = b"".join(log_lines)
    damaged = data[: cut % (len(data) + 1)] + noise
    if binary_without_lines(damaged):  # the input guard's one refusal of a text file
        with pytest.raises(InputFileError, match="binary data with no line break"):
            _parse(damaged, chunk=chunk)
        return
    stats = _parse(damaged, chunk=chunk)
    assert stats.ok <= _baseline(log_lines).ok + 1


@_SETTINGS
@given(chunk=st.integers(min_value=1, max_value=2048))
def test_block_size_does_not_change_the_result(log_lines: list[bytes], chunk: int) -> None:
    data = b"".join(log_lines)
    assert _parse(data, chunk=chunk) == _parse(data)


# Text lines that can never hold a TORCH_TRACE envelope (no "] " after a glog prefix).
_plain_line = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n]"),
    max_size=60,
)


@_SETTINGS
@given(lines=st.lists(_plain_line, max_size=30))
def test_input_without_records_is_one_error_with_counts(lines: list[str]) -> None:
    from kerneltracer.analysis.structured_logs.api import parse
    from kerneltracer.errors import NoRecordsError

    text = "".join(line + "\n" for line in lines).encode()
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "not_a_log.txt"
        src.write_bytes(text)
        with pytest.raises(NoRecordsError) as info:
            parse(src, Path(tmp) / "out")
        assert not (Path(tmp) / "out").exists()
    stats = info.value.stats
    assert stats.lines == len(lines)
    assert stats.ok == 0
    # Blank lines are dropped like tlparse does; the others are each a glog failure.
    assert stats.fail_glog == sum(1 for line in lines if line.strip("\n") != "")
    assert f"no TORCH_TRACE records ({len(lines)} lines read" in str(info.value)


def test_cli_on_a_non_log_says_so_in_one_line(tmp_path: Path) -> None:
    from tests.helpers import kt

    src = tmp_path / "passwd"
    src.write_text("root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1::/usr/sbin:/bin/sh\n")
    proc = kt("logs", str(src), "-o", str(tmp_path / "X"))
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert lines == [
        f"error: {src}: no TORCH_TRACE records (2 lines read, 2 glog failures, "
        "0 JSON envelope failures); is this a TORCH_TRACE log "
        "(TORCH_TRACE=dir or TORCH_LOGS=+structured)?"
    ]
    assert not (tmp_path / "X").exists()


@pytest.mark.parametrize("chunk", [7, 64, 4096])  # blocks under the limit, as in use
def test_a_record_over_the_size_limit_is_read_through_and_counted(
    log_lines: list[bytes], chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A huge payload is never held: that one record is a counted failure and every
    record after it parses as if it were not there."""
    from kerneltracer.analysis.structured_logs import records

    base = _baseline(log_lines)
    heads = [i for i, line in enumerate(log_lines) if not line.startswith(b"\t")]
    at = heads[len(heads) // 2]
    huge = [
        b'V1206 15:18:15.925000 1500233 x.py:1] {"artifact": {"name": "big"}, '
        b'"frame_id": 0, "frame_compile_id": 0, "has_payload": "0"}\n',
        *[b"\t" + b"x" * 50 + b"\n"] * 400,
    ]
    # Over the limit, which every record of the log is under.
    limit = sum(map(len, huge)) - 100
    assert limit > sum(map(len, log_lines))
    monkeypatch.setattr(records, "MAX_RECORD_BYTES", limit)
    got = _parse(b"".join([*log_lines[:at], *huge, *log_lines[at:]]), chunk)
    assert got.fail_too_large == 1
    assert (got.ok, got.fail_glog, got.fail_json, got.fail_payload_md5) == (
        base.ok,
        base.fail_glog,
        base.fail_json,
        base.fail_payload_md5,
    )


def test_an_oversized_record_keeps_its_line_number_and_the_next_ones(tmp_path: Path) -> None:
    head = b'V1206 15:18:15.925000 1 x.py:1] {"a": 1}\n'
    src = tmp_path / "log"
    src.write_bytes(head + head + b"\tpay\n" * 30 + head + b"\tp\n")
    got = list(iter_records(src, chunk_size=16, max_record=60))
    assert [(r.lineno, r.oversized, r.payload_lines) for r in got] == [
        (1, False, 0),
        (2, True, 30),
        (33, False, 1),
    ]
    assert got[1].head == head.rstrip() and got[1].payload is None
    assert got[2].payload == b"p"


def test_one_payload_line_over_the_line_limit_is_a_skipped_record(
    log_lines: list[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A JSON artifact logged on one huge payload line costs that record, not the log."""
    from kerneltracer.analysis.structured_logs import records

    monkeypatch.setattr(records, "MAX_LINE_BYTES", 25_000)
    monkeypatch.setattr(records, "MAX_RECORD_BYTES", 20_000)  # over every record of the log
    head = b'V1206 15:18:15.925000 1 x.py:1] {"artifact": {"name": "j"}, "has_payload": "0"}\n'
    got = _parse(b"".join([head, b"\t" + b"[1," * 10_000 + b"1]\n", *log_lines]), 1024)
    assert got.fail_too_large == 1
    assert got.ok == _baseline(log_lines).ok
    with pytest.raises(InputFileError, match="longer than"):
        _parse(b"".join([b"V" * 30_000 + b"\n", *log_lines]), 1024)


def _brute_last_boundary(block: bytes, after_newline: bool) -> int:
    last = next(
        (
            i + 1
            for i in range(len(block) - 2, -1, -1)
            if block[i] == 10 and block[i + 1] not in b"\t\r\n"
        ),
        -1,
    )
    if last < 0 and after_newline and block[:1] not in (b"\t", b"\r", b"\n"):
        return 0
    return last


@_SETTINGS
@given(
    pieces=st.lists(
        st.sampled_from([b"\n", b"\t", b"\r", b"a", b"\n\t" + b"p" * 40_000]), max_size=12
    ),
    after=st.booleans(),
)
def test_last_boundary_is_found_however_far_from_the_block_end(
    pieces: list[bytes], after: bool
) -> None:
    """The search from the end in growing windows finds what a full scan finds."""
    block = b"".join(pieces)
    assert _last_boundary(block, after_newline=after) == _brute_last_boundary(block, after)


_line = st.sampled_from(
    [b"", b"\r", b"\tpayload", b"\t", b"V0101 00:00:00.000000 1 x.py:1] {}", b"garbage"]
)


@_SETTINGS
@given(
    lines=st.lists(_line, max_size=40),
    ended=st.booleans(),
    chunk=st.integers(min_value=1, max_value=64),
)
def test_line_count_and_record_lines_match_a_plain_count(
    tmp_path_factory: pytest.TempPathFactory, lines: list[bytes], ended: bool, chunk: int
) -> None:
    """Lines are counted once per block (not per record): the total and each record's line
    number still agree with counting the file's newlines directly."""
    data = b"\n".join(lines) + (b"\n" if ended and lines else b"")
    src = tmp_path_factory.mktemp("lines") / "log"
    src.write_bytes(data)
    manifest = parse_log(src, src.parent / "inter", hash_source=False)
    want = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
    assert manifest["stats"]["lines"] == want
    assert manifest["source_file_hash"] == ""
    if lines and all(line and b"\r" not in line for line in lines):
        # Without blank lines every record's line number is exact: a record starts at
        # the first line and at every line that is not a payload line.
        starts = [i + 1 for i, line in enumerate(lines) if i == 0 or line[:1] != b"\t"]
        assert [rec.lineno for rec in iter_records(src, chunk_size=chunk)] == starts
