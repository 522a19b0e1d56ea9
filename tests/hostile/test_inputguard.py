"""The one input guard (kerneltracer.inputguard) every reader of user files goes through."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

from kerneltracer.environ import KtEnv
from kerneltracer.errors import InputFileError, InputTooLargeError, TruncatedInputError
from kerneltracer.inputguard import (
    DEFAULT_MAX_BYTES,
    InputLimits,
    check_json_start,
    open_input,
    read_input,
    read_input_text,
)

SMALL = InputLimits(max_bytes=1000, max_events=10)


def _gzip_bomb(path: Path, size: int, byte: bytes = b" ") -> Path:
    with gzip.open(path, "wb", compresslevel=9) as fh:
        fh.write(b"[")
        block = byte * (1 << 20)
        for _ in range(size >> 20):
            fh.write(block)
    return path


def test_gzip_declaring_more_than_the_limit_is_refused_before_reading(tmp_path: Path) -> None:
    bomb = _gzip_bomb(tmp_path / "b.json.gz", 4 << 20)
    with pytest.raises(InputTooLargeError, match=r"more than 1000 bytes once decompressed"):
        open_input(bomb, SMALL)


def test_gzip_whose_trailer_lies_is_stopped_by_counting(tmp_path: Path) -> None:
    # Two members: the trailer read is the last member's small size; the count is not fooled.
    path = tmp_path / "two.json.gz"
    path.write_bytes(gzip.compress(b"[" + b" " * 5000) + gzip.compress(b"]"))
    with pytest.raises(InputTooLargeError, match="--max-input-size"):
        read_input(path, SMALL)
    assert read_input(path, InputLimits(max_bytes=None)) == b"[" + b" " * 5000 + b"]"


def test_plain_file_above_the_limit_is_refused_by_its_size(tmp_path: Path) -> None:
    sparse = tmp_path / "sparse.json"
    with open(sparse, "wb") as fh:
        fh.truncate(1 << 30)  # 1 GiB of NUL bytes, no disk used
    with pytest.raises(InputTooLargeError, match="KT_MAX_INPUT_SIZE"):
        open_input(sparse, InputLimits(max_bytes=DEFAULT_MAX_BYTES >> 2))
    with pytest.raises(InputFileError, match=r"not a JSON document \(starts with b'\\x00"):
        open_input(sparse, json=True)


@pytest.mark.parametrize(
    ("head", "why"),
    [
        (b"", "empty"),
        (b"   \n\t ", "empty"),
        (b"\x00\x00\x00", "starts with"),
        (b"PK\x03\x04", "starts with"),
        (b"hello", "starts with"),
        (b" " * (70 << 10), "only whitespace"),
    ],
)
def test_json_readers_refuse_what_cannot_start_a_document(head: bytes, why: str) -> None:
    with pytest.raises(InputFileError, match=why):
        check_json_start(Path("x.json"), head)


@pytest.mark.parametrize("head", [b"{", b"[", b"  \n{", b"\xef\xbb\xbf[1]"])
def test_json_starts_that_are_fine(head: bytes) -> None:
    check_json_start(Path("x.json"), head)


def test_not_regular_files_are_refused_by_kind(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match="is a directory"):
        open_input(tmp_path)
    with pytest.raises(InputFileError, match="does not exist"):
        open_input(tmp_path / "nope")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(InputFileError, match="not a regular file"):
        open_input(fifo)  # would block forever if it were opened
    with pytest.raises(InputFileError, match="not a regular file"):
        open_input(Path("/dev/zero"))


def test_corrupt_and_truncated_gzip_are_one_line_errors(tmp_path: Path) -> None:
    data = gzip.compress(b'{"a": 1}' * 1000)
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(TruncatedInputError, match=r"cut.json.gz: truncated gzip file \(it ends"):
        read_input(cut)
    flipped = tmp_path / "flip.json.gz"
    flipped.write_bytes(data[:20] + bytes(b ^ 0xFF for b in data[20:40]) + data[40:])
    with pytest.raises(InputFileError, match=r"flip\.json\.gz: corrupt gzip data"):
        read_input(flipped)
    bad_crc = tmp_path / "crc.json.gz"
    bad_crc.write_bytes(data[:-8] + bytes(4) + data[-4:])
    with pytest.raises(InputFileError, match=r"crc.json.gz: corrupt gzip data \(CRC check failed"):
        read_input(bad_crc)


def _cut_with_huge_tail(data: bytes, limit: int) -> bytes:
    """``data`` cut where its last four bytes, read as the gzip trailer's size, exceed
    ``limit``: what an interrupted copy of a trace looks like to a trailer check."""
    for end in range(len(data) // 2, len(data) - 8):
        if int.from_bytes(data[end - 4 : end], "little") > limit:
            return data[:end]
    raise AssertionError("no such cut")


def test_truncated_gzip_is_not_reported_as_too_large(tmp_path: Path) -> None:
    """Issue 38: a cut .json.gz was refused as "more than 2 GiB once decompressed" (its
    last compressed bytes read as the trailer's size) and the user told to raise the limit."""
    body = b"".join(b'{"ts": %d, "name": "k%d"},' % (i * 7919, i * 104729) for i in range(20000))
    data = gzip.compress(b"[" + body + b"{}]")
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(_cut_with_huge_tail(data, DEFAULT_MAX_BYTES))
    with pytest.raises(TruncatedInputError, match="truncated gzip file") as err:
        read_input(cut)
    assert "max-input-size" not in str(err.value)
    # A real trailer above the limit is still refused before anything is parsed.
    bomb = _gzip_bomb(tmp_path / "big.json.gz", 4 << 20)
    with pytest.raises(InputTooLargeError, match="more than 1000 bytes once decompressed"):
        open_input(bomb, SMALL)
    # Bad data behind a trailer above the limit: corrupt, not too large.
    data = gzip.compress(b'{"a": 1}' * 1000)
    flipped = tmp_path / "flip.json.gz"
    flipped.write_bytes(data[:20] + bytes(b ^ 0xFF for b in data[20:40]) + data[40:])
    with pytest.raises(InputFileError, match=r"flip\.json\.gz: corrupt gzip data"):
        open_input(flipped, SMALL)


def test_invalid_utf8_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_bytes(b"a: 1\nb: \xff\xfe\n")
    with pytest.raises(InputFileError, match=r"t.yaml:2: not UTF-8 text \(byte 0xff at column 4\)"):
        read_input_text(path)


def test_limits_from_the_environment() -> None:
    def limits(env: dict[str, str]) -> InputLimits:
        return InputLimits.from_env(KtEnv.read(env))

    assert limits({}) == InputLimits()
    got = limits({"KT_MAX_INPUT_SIZE": "8G", "KT_MAX_EVENTS": "0"})
    assert got == InputLimits(max_bytes=8 << 30, max_events=None)
    assert limits(got.env()) == got
    with pytest.raises(InputFileError, match="KT_MAX_INPUT_SIZE='lots' is not a size"):
        limits({"KT_MAX_INPUT_SIZE": "lots"})
    with pytest.raises(InputFileError, match="KT_MAX_EVENTS='-1' is not a count"):
        limits({"KT_MAX_EVENTS": "-1"})


def test_event_limit_names_the_flag() -> None:
    SMALL.check_events(Path("t"), 10)
    with pytest.raises(InputTooLargeError, match=r"more than 10 records .*--max-events"):
        SMALL.check_events(Path("t"), 11, "records")
