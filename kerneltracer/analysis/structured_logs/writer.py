"""Buffered appenders for the many JSONL files of an intermediate directory.

The parser produces lines for a few dozen files at once (``raw.jsonl``, one file per
envelope type, one per compile id). Each file gets an in-memory buffer flushed in large
appends, so memory stays bounded by the flush threshold whatever the log size, and the
number of open descriptors stays at one. Everything is written inside a staging directory
that the caller renames into place at the end (see ``staging.py``), which is what makes
the whole intermediate appear atomically.
"""

from __future__ import annotations

from pathlib import Path

_FLUSH_BYTES = 1 << 20
_TOTAL_BYTES = 4 << 20


class BufferedFiles:
    def __init__(self, root: Path, keep_in_memory: dict[str, int] | None = None) -> None:
        self.root = root
        # Files held in memory up to their own limit (and out of the shared budget).
        self._keep = dict(keep_in_memory or {})
        self._bufs: dict[str, list[bytes]] = {}
        self._sizes: dict[str, int] = {}
        self._total = 0
        self._created: set[str] = set()

    def append(self, rel: str, data: bytes) -> None:
        buf = self._bufs.get(rel)
        if buf is None:
            buf = self._bufs[rel] = []
            self._sizes[rel] = 0
        buf.append(data)
        size = self._sizes[rel] + len(data)
        self._sizes[rel] = size
        limit = self._keep.get(rel)
        if limit is not None:
            if size >= limit:
                self._flush(rel)
            return
        self._total += len(data)
        if size >= _FLUSH_BYTES:
            self._flush(rel)
        elif self._total >= _TOTAL_BYTES:
            for name in list(self._bufs):
                if name not in self._keep:
                    self._flush(name)

    def touch(self, rel: str) -> None:
        """Make sure ``rel`` exists even if nothing is ever appended."""
        self._bufs.setdefault(rel, [])
        self._sizes.setdefault(rel, 0)

    def _flush(self, rel: str) -> None:
        buf = self._bufs[rel]
        path = self.root / rel
        if rel not in self._created:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._created.add(rel)
            mode = "wb"
        else:
            mode = "ab"
        with open(path, mode) as fh:
            fh.write(b"".join(buf))
        if rel not in self._keep:
            self._total -= self._sizes[rel]
        buf.clear()
        self._sizes[rel] = 0

    def take(self, rel: str) -> list[bytes]:
        """Remove and return what is still buffered for ``rel`` (not written to disk)."""
        buf = self._bufs.pop(rel, [])
        self._sizes.pop(rel, None)
        if rel not in self._keep:
            self._total -= sum(map(len, buf))
        return buf

    def close(self) -> list[str]:
        """Flush everything; return the relative paths written, sorted."""
        for rel in list(self._bufs):
            self._flush(rel)
        return sorted(self._created)
