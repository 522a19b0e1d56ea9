"""Split a TORCH_TRACE log into records: one glog line plus its tab-indented payload lines.

The file is read in large blocks and cut at every newline not followed by a tab, so the
payload lines of a record are never visited one by one in Python: the payload is the block
after the first line with the leading tab of each line removed, done by ``bytes.replace``.
Blank lines are dropped first, as tlparse does (a log shipper may stutter an empty line;
an empty payload line is still a lone tab).

A record larger than :data:`MAX_RECORD_BYTES` is not held: its bytes are read through and
it comes out as an ``oversized`` record without payload (the parser counts it as a failure,
which ``--strict`` turns into an error), so memory stays bounded whatever the log holds.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path

from kerneltracer.errors import InputFileError
from kerneltracer.inputguard import open_input

# A newline that ends a record: the next line is not a tab-indented payload line.
_BOUNDARY = re.compile(rb"\n(?!\t)")
# A newline followed by the first character of a glog line (a record's start).
_HEAD_START = re.compile(rb"\n(?=[^\t\r\n])")
_CHUNK = 1 << 20
# Torch writes envelopes and payload lines far below this; a longer line is no TORCH_TRACE
# log (a binary dump, a JSON file on one line), and reading on would hold all of it.
MAX_LINE_BYTES = 64 << 20
# A record (glog line plus payload) is held whole and copied a few times on its way to the
# intermediate; past this size it is skipped so a reader's peak stays under ~300 MiB.
MAX_RECORD_BYTES = 32 << 20


@dataclass(slots=True)
class Record:
    lineno: int  # 1-based line of the glog line in the file (blank lines counted)
    head: bytes  # the glog line, without its newline
    payload: bytes | None  # tab-stripped payload lines joined by "\n"; None when absent
    payload_lines: int
    oversized: bool = False  # over MAX_RECORD_BYTES: read through, payload not kept


def iter_records(
    path: Path,
    chunk_size: int = _CHUNK,
    on_block: Callable[[bytes, int], object] | None = None,
    max_record: int | None = None,
) -> Iterator[Record]:
    """Yield the records of ``path``; ``on_block`` sees every raw block read (for hashing)
    with its count of newlines.

    Each block is scanned once for its last record boundary; the tail after it waits in
    ``pending`` (as pieces, so a record larger than a block is not re-copied per read).
    """
    limit = MAX_RECORD_BYTES if max_record is None else max_record
    lineno = 1
    pending: list[bytes] = []
    held = 0  # bytes in pending
    line = _LineGuard(path)
    skip: _Skipped | None = None
    with open_input(path, what="TORCH_TRACE log", text=True, gzip=False) as fh:
        while True:
            block = fh.read(chunk_size)
            if not block:
                if skip is not None:
                    yield skip.record()
                    return
                data = b"".join(pending)
                if data:
                    yield from _split(data, lineno)
                return
            newlines = line.see(block)
            if on_block is not None:
                on_block(block, newlines)
            if skip is not None:
                start = skip.next_start(block)
                if start < 0:
                    continue
                yield skip.record()
                lineno, skip = skip.lineno + skip.lines, None
                block = block[start:]
            elif pending and held + len(block) > limit:
                # The record begun in pending may run past the limit: where does it end?
                probe = _Skipped(pending, lineno)
                pending, held = [], 0
                start = probe.next_start(block)
                if start < 0:
                    skip, probe.pieces = probe, []
                    continue
                if probe.size + start > limit:
                    yield probe.record()
                    lineno = probe.lineno + probe.lines
                    block = block[start:]
                else:
                    pending, held = probe.pieces, probe.size
            cut = _last_boundary(block, after_newline=bool(pending) and pending[-1][-1:] == b"\n")
            if cut < 0:
                pending.append(block)
                held += len(block)
                continue
            data = b"".join([*pending, block[:cut]]) if pending else block[:cut]
            pending = [block[cut:]] if cut < len(block) else []
            held = len(block) - cut
            if data:
                lineno = yield from _split(data, lineno)


class _Skipped:
    """An oversized record being read through: its first line and its line count only."""

    def __init__(self, pieces: list[bytes], lineno: int) -> None:
        self.lineno = lineno
        self.pieces = pieces  # until the caller knows the record is too large
        self.size = sum(map(len, pieces))
        head: list[bytes] = []
        for piece in pieces:  # the first line may run over several pieces
            end = piece.find(b"\n", 0 if head else len(piece) - len(piece.lstrip(b"\r\n")))
            head.append(piece if end < 0 else piece[:end])
            if end >= 0:
                break
        self.head = b"".join(head).lstrip(b"\r\n").rstrip(b"\r")
        self.lines = sum(p.count(b"\n") for p in pieces)
        self.ended = pieces[-1][-1:] == b"\n"

    def next_start(self, block: bytes) -> int:
        """Offset in ``block`` where the next record starts (counting the lines before it),
        or -1 when the whole block still belongs to the skipped record."""
        if self.ended and block[:1] not in (b"\t", b"\r", b"\n"):
            return 0
        m = _HEAD_START.search(block)
        if m is None:
            self.lines += block.count(b"\n")
            self.ended = block[-1:] == b"\n"
            return -1
        self.lines += block.count(b"\n", 0, m.end())
        return m.end()

    def record(self) -> Record:
        return Record(self.lineno, self.head, None, max(self.lines - 1, 0), oversized=True)


class _LineGuard:
    """Refuses a line longer than :data:`MAX_LINE_BYTES`, however the blocks cut it.

    Lines inside one block are shorter than a block (far below the limit): only the line
    that runs across blocks is counted. A payload line (tab first) is exempt: a long one
    is a record over :data:`MAX_RECORD_BYTES`, skipped and counted, not a sign that the
    file is no log (a binary dump, a JSON document on one line)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lines = 0  # newlines before the current line
        self.open = 0  # bytes of the current line seen so far
        self.payload = False  # the current line is a payload line

    def see(self, block: bytes) -> int:
        """Check ``block``; return its number of newlines (counted once, for every reader)."""
        if self.open == 0:
            self.payload = block[:1] == b"\t"
        first = block.find(b"\n")
        length = self.open + (len(block) if first < 0 else first)
        if length > MAX_LINE_BYTES and not self.payload:
            raise InputFileError(
                f"{self.path}: line {self.lines + 1} is longer than {MAX_LINE_BYTES >> 20} MiB: "
                "not a TORCH_TRACE log"
            )
        if first < 0:
            self.open = length
            return 0
        newlines = block.count(b"\n")
        self.lines += newlines
        last = block.rfind(b"\n")
        self.open = len(block) - last - 1
        self.payload = block[last + 1 : last + 2] == b"\t"
        return newlines


def _last_boundary(block: bytes, *, after_newline: bool) -> int:
    """Offset in ``block`` where its last complete record ends (a new record starts), or -1.

    Searched in growing windows from the end: the boundary is nearly always close to it,
    and visiting every record start of a large block costs more than the parse of a record.
    """
    last = -1
    window = 1 << 16
    start = max(0, len(block) - window)
    while True:  # a window grown ×4 each time: at most ~1.3 scans of the block in all
        for m in _HEAD_START.finditer(block, start):
            last = m.end()
        if last >= 0 or start == 0:
            break
        window *= 4
        start = max(0, len(block) - window)
    if last < 0 and after_newline and block[:1] not in (b"\t", b"\r", b"\n"):
        return 0
    return last


def _split(data: bytes, lineno: int) -> Generator[Record, None, int]:
    """Yield the records of ``data`` (which ends at a record boundary); return the next line number.

    Line numbers are exact unless the block had blank lines, which shift those after them
    within the block (the next block starts exact again).
    """
    if b"\r\n" in data:
        data = data.replace(b"\r\n", b"\n")  # CRLF logs: lines end like tlparse reads them
    size = len(data)
    while b"\n\n" in data:
        data = data.replace(b"\n\n", b"\n")
    data = data.lstrip(b"\n")
    # Only newlines were dropped since ``size``: the records below count every other line
    # (a last line without its newline included), so the file's line count needs no pass.
    blank = size - len(data)
    pos = 0
    n = len(data)
    search = _BOUNDARY.search
    while pos < n:
        end = data.find(b"\n", pos)
        if end < 0:
            end = n
        head = data[pos:end]
        m = search(data, end)
        stop = n if m is None else m.start()
        if stop > end:
            body = data[end + 2 : stop]
            payload: bytes | None = body.replace(b"\n\t", b"\n")
            plines = body.count(b"\n") + 1
        else:
            payload, plines = None, 0
        yield Record(lineno, head, payload, plines)
        lineno += 1 + plines
        pos = stop + 1
    return lineno + blank
