"""Event args kept as their JSON text, packed: one bytes object per batch of events (the texts
comma-separated, as in a JSON array) and the rows' offsets in it, decoded only when a row is
looked up.

Hundreds of thousands of small dicts (a GPU kernel's launch args) or msgspec structs (a
host op's shapes) cost several times their text in Python objects, and a bytes object and
a dict entry per row still double it; packed, a row costs its text and 24 bytes. On a
3M-event trace that is the difference between a bounded load and one that is not.

Past ``SPILL_BYTES`` the texts go to an unnamed temp file and are read back by position:
a 3M-event trace's 113 MiB of kept args were a third of its resident size while only op
attribution, the InferScope writer and the collectives read them (each a batch or a row
at a time), and a forked writer's resident size counted them again.
"""

from __future__ import annotations

import os
import tempfile
import weakref
from collections.abc import Callable, Iterator, Mapping
from typing import IO, Any, Generic, TypeVar

import msgspec
import numpy as np

from kerneltracer.core.heap import release_free_heap

V = TypeVar("V")


class PackedTexts:
    """JSON texts by row; rows are added in increasing order (the loader's row order)."""

    # A MiB stays in memory: a small trace's texts cost less than a file. Past it, even at
    # 218k events (~8 MiB of texts), the file takes ~16 MiB off the tree's peak (the parent's
    # pages count again in the forked writer's) at no measurable CPU cost.
    SPILL_BYTES = 1 << 20

    def __init__(self, spill_bytes: int = SPILL_BYTES) -> None:
        self._spill_bytes = spill_bytes
        self._blobs: list[bytes] = []  # in memory until spilled, then empty
        self._held = 0  # bytes in _blobs
        self._file: IO[bytes] | None = None  # once spilled: every blob, back to back
        self._offsets: list[int] = []  # each blob's start in the file
        self._size = 0  # bytes written to the file
        self._last: tuple[int, bytes] | None = None  # the blob read last, once spilled
        self._chunks: list[tuple[np.ndarray, np.ndarray]] = []  # (rows, ends) per blob
        # Joined on first lookup: rows, blob number, start and end of each text.
        self._index: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None

    def add(self, rows: list[int], texts: list[bytes]) -> None:
        if not rows:
            return
        lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
        self.add_joined(rows, b",".join(texts), _ends(lengths))

    def add_joined(self, rows: list[int] | np.ndarray, blob: bytes, ends: np.ndarray) -> None:
        """Texts given joined: ``blob`` is ``b",".join(texts)`` and ``ends`` each text's end
        in it (a text starts one byte after the one before it ends). Comma-separated, a
        batch's blob is its JSON array's body: no copy with commas put in to decode it."""
        if not len(rows):
            return
        # Offsets within one batch's blob (a few MiB): 32 bits, the index a third smaller.
        wide = np.int64 if len(blob) >= 1 << 31 else np.int32
        ends = ends.astype(wide, copy=False)
        self._chunks.append((np.asarray(rows, dtype=np.int64), ends))
        self._index = None
        if self._file is not None:
            self._append(self._file, blob)
            return
        self._blobs.append(blob)
        self._held += len(blob)
        if self._held > self._spill_bytes:
            self._spill()

    def _spill(self) -> None:
        # Unbuffered: a read by position must see every byte written before it. Unnamed
        # (unlinked at once where the system allows): nothing is left behind on any exit.
        # Open as long as the texts live, closed with them (no ResourceWarning).
        file = tempfile.TemporaryFile(prefix="kerneltracer-args-", buffering=0)  # noqa: SIM115
        weakref.finalize(self, file.close)
        self._file = file
        blobs, self._blobs, self._held = self._blobs, [], 0
        for blob in blobs:
            self._append(self._file, blob)

    def _append(self, file: IO[bytes], blob: bytes) -> None:
        view = memoryview(blob)
        while view:  # a raw write may take only part of it
            view = view[file.write(view) or 0 :]
        self._offsets.append(self._size)
        self._size += len(blob)

    def _read(self, blob: int, start: int, end: int) -> bytes:
        if self._file is None:
            return self._blobs[blob][start:end]
        # Rows are looked up mostly in the order they were read (a blob's rows together):
        # the last blob read whole serves them without a read each.
        if self._last is None or self._last[0] != blob:
            self._last = (blob, self._whole(blob))
        return self._last[1][start:end]

    def _whole(self, blob: int) -> bytes:
        if self._file is None:
            return self._blobs[blob]
        if self._last is not None and self._last[0] == blob:
            return self._last[1]
        size = int(self._chunks[blob][1][-1])
        return _pread(self._file.fileno(), size, self._offsets[blob])

    def _joined(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        if self._index is None:
            if not self._chunks:
                empty = np.empty(0, dtype=np.int64)
                self._index = (empty, empty, empty, empty)
                return self._index
            rows = np.concatenate([r for r, _ in self._chunks])
            ends = np.concatenate([e for _, e in self._chunks])
            blob = np.concatenate(
                [np.full(len(r), i, dtype=np.int32) for i, (r, _) in enumerate(self._chunks)]
            )
            starts = np.concatenate(
                [np.concatenate((np.zeros(1, e.dtype), e[:-1] + 1)) for _, e in self._chunks]
            )
            if rows.size < 2 or bool((rows[1:] >= rows[:-1]).all()):
                # Already sorted, as the loader adds them: no sorted copies beside these
                # (~14 MiB more, briefly, at 3M events).
                self._index = (rows, blob, starts, ends)
            else:  # a caller mixed them
                order = np.argsort(rows, kind="stable")
                self._index = (rows[order], blob[order], starts[order], ends[order])
        return self._index

    def text(self, row: int) -> bytes | None:
        rows, blob, starts, ends = self._joined()
        # The array's own searchsorted and item(): called once per looked-up row (every
        # GPU event the writer formats, every op instance), np.searchsorted's dispatch and
        # numpy scalars were most of a lookup's time.
        pos = int(rows.searchsorted(row))
        if pos >= rows.size or rows.item(pos) != row:
            return None
        return self._read(blob.item(pos), starts.item(pos), ends.item(pos))

    def texts_of(self, rows: np.ndarray) -> list[bytes | None]:
        """:meth:`text` of each of ``rows``, found with one search for all and read in
        the order packed (a spilled blob is read once for its rows, not once a switch)."""
        index, blob, starts, ends = self._joined()
        out: list[bytes | None] = [None] * rows.size
        if not index.size:
            return out
        pos = np.minimum(index.searchsorted(rows), index.size - 1)
        q = np.flatnonzero(index[pos] == rows)
        q = q[np.argsort(pos[q], kind="stable")]
        p = pos[q]
        for i, b, s, e in zip(
            q.tolist(), blob[p].tolist(), starts[p].tolist(), ends[p].tolist(), strict=True
        ):
            out[i] = self._read(b, s, e)
        return out

    def rows(self) -> list[int]:
        return self._joined()[0].tolist()

    def json_arrays(
        self, only: Callable[[bytes], bool] | None = None
    ) -> Iterator[tuple[np.ndarray, bytes]]:
        """(rows, their texts as one JSON array's text ``[t1,t2,…]``) of each packed
        batch (with ``only``, of each batch whose texts joined, ``t1,t2,…``, it accepts),
        in the order added: a pass over every text that holds one batch at a time,
        made from the blob without an object a text. Each batch's buffers (and what the
        caller made of them) are handed back before the next: buffers of a MiB or two,
        each a little larger or smaller than the last, left the heap in holes glibc did
        not reuse, +80 MiB resident over one pass at 3M events."""
        for i, (rows, _) in enumerate(self._chunks):
            whole = self._whole(i)
            if only is not None and not only(whole):
                continue
            text = b"".join((b"[", whole, b"]"))
            del whole
            yield rows, text
            del text
            release_free_heap()

    def __len__(self) -> int:
        return sum(len(r) for r, _ in self._chunks)


def _ends(lengths: np.ndarray) -> np.ndarray:
    """Where each of texts of ``lengths`` ends in their comma-separated join."""
    ends = np.cumsum(lengths)
    ends += np.arange(lengths.size)
    return ends


def joined_ranges(blob: bytes, starts: np.ndarray, ends: np.ndarray) -> tuple[bytes, np.ndarray]:
    """The texts ``blob[starts[i]:ends[i]]`` (in order, apart) comma-separated, and each
    one's end in that: for texts picked from a JSON array's text, where the ones that are
    neighbours there are copied together with the comma between them, a slice a run."""
    if not starts.size:
        return b"", starts
    # Runs: a text that starts right after the comma that ends the one before.
    breaks = np.flatnonzero(starts[1:] != ends[:-1] + 1) + 1
    run_starts = starts[np.concatenate(([0], breaks))].tolist()
    run_ends = ends[np.concatenate((breaks - 1, [ends.size - 1]))].tolist()
    view = memoryview(blob)
    text = b",".join([view[a:b] for a, b in zip(run_starts, run_ends, strict=True)])
    return text, _ends(ends - starts)


def _pread(fd: int, size: int, offset: int) -> bytes:
    parts = []
    while size > 0:
        part = os.pread(fd, size, offset)
        if not part:
            raise OSError(f"packed args file ended {size} bytes early")
        parts.append(part)
        size -= len(part)
        offset += len(part)
    return b"".join(parts)


class PackedMapping(Mapping[int, V], Generic[V]):
    """Rows' decoded args, each decoded from its packed text when looked up (not kept: the
    callers read each row once or twice). ``direct`` holds values that came decoded."""

    def __init__(self, decode: Callable[[bytes], V]) -> None:
        self.texts = PackedTexts()
        self.direct: dict[int, V] = {}
        self._decode = decode

    def __getitem__(self, row: int) -> V:
        found = self.direct.get(row)
        if found is not None:
            return found
        text = self.texts.text(row)
        if text is None:
            raise KeyError(row)
        return self._decode(text)

    def get(self, row: int, default: Any = None) -> Any:
        """``self[row]``, else ``default``: without Mapping.get's KeyError raised and caught
        per missing row (most GPU events' lookups in a trace without kept args)."""
        found = self.direct.get(row)
        if found is not None:
            return found
        text = self.texts.text(row)
        return default if text is None else self._decode(text)

    def get_many(self, rows: np.ndarray, default: Any = None) -> Iterator[Any]:
        """``self.get(row, default)`` of each of ``rows`` in turn: the texts found all at
        once, each decoded only when reached (a chunk's values held at once cost more than
        their texts)."""
        direct = self.direct
        return (
            found
            if (found := direct.get(r)) is not None
            else (default if text is None else self._decode(text))
            for r, text in zip(rows.tolist(), self.texts.texts_of(rows), strict=True)
        )

    def __contains__(self, row: object) -> bool:
        return type(row) is int and (row in self.direct or self.texts.text(row) is not None)

    def __iter__(self) -> Iterator[int]:
        return iter(sorted([*self.texts.rows(), *self.direct]))

    def __len__(self) -> int:
        return len(self.texts) + len(self.direct)


def decode_object(text: bytes) -> dict[str, Any]:
    """A JSON object's text (checked when it was packed) as a dict."""
    value = msgspec.json.decode(text)
    return value if type(value) is dict else {}


def is_object_text(raw: bytes) -> bool:
    """JSON text of an object with at least one key (what the loader keeps)."""
    return raw[:1] == b"{" and bool(raw[1:-1].strip())
