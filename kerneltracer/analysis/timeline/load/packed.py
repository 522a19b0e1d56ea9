"""Event args kept as their JSON text, packed: one bytes object per batch of events and the
rows' offsets in it, decoded only when a row is looked up.

Hundreds of thousands of small dicts (a GPU kernel's launch args) or msgspec structs (a
host op's shapes) cost several times their text in Python objects, and a bytes object and
a dict entry per row still double it; packed, a row costs its text and 24 bytes. On a
3M-event trace that is the difference between a bounded load and one that is not.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from itertools import pairwise
from typing import Any, Generic, TypeVar

import msgspec
import numpy as np

V = TypeVar("V")


class PackedTexts:
    """JSON texts by row; rows are added in increasing order (the loader's row order)."""

    def __init__(self) -> None:
        self._blobs: list[bytes] = []
        self._chunks: list[tuple[np.ndarray, np.ndarray]] = []  # (rows, ends) per blob
        # Joined on first lookup: rows, blob number, start and end of each text.
        self._index: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None

    def add(self, rows: list[int], texts: list[bytes]) -> None:
        if not rows:
            return
        ends = np.cumsum(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)))
        self._blobs.append(b"".join(texts))
        self._chunks.append((np.asarray(rows, dtype=np.int64), ends))
        self._index = None

    def _joined(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        if self._index is None:
            if not self._chunks:
                empty = np.empty(0, dtype=np.int64)
                self._index = (empty, empty, empty, empty)
                return self._index
            rows = np.concatenate([r for r, _ in self._chunks])
            ends = np.concatenate([e for _, e in self._chunks])
            blob = np.concatenate(
                [np.full(len(r), i, dtype=np.int64) for i, (r, _) in enumerate(self._chunks)]
            )
            starts = np.concatenate([np.concatenate(([0], e[:-1])) for _, e in self._chunks])
            order = np.argsort(rows, kind="stable")  # already sorted unless a caller mixed
            self._index = (rows[order], blob[order], starts[order], ends[order])
        return self._index

    def text(self, row: int) -> bytes | None:
        rows, blob, starts, ends = self._joined()
        pos = int(np.searchsorted(rows, row))
        if pos >= rows.size or int(rows[pos]) != row:
            return None
        return self._blobs[int(blob[pos])][int(starts[pos]) : int(ends[pos])]

    def rows(self) -> list[int]:
        return self._joined()[0].tolist()

    def batches(self) -> Iterator[tuple[np.ndarray, list[bytes]]]:
        """(rows, texts) of each packed batch, in the order added: a pass over every text
        that holds one batch's texts as objects at a time, not all of them."""
        for blob, (rows, ends) in zip(self._blobs, self._chunks, strict=True):
            bounds = [0, *ends.tolist()]
            yield rows, [blob[s:e] for s, e in pairwise(bounds)]

    def __len__(self) -> int:
        return sum(len(r) for r, _ in self._chunks)


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
