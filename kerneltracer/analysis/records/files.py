"""Streamed atomic writes: big reports go to a temp file that is renamed only when complete.

``kerneltracer.jsonio.atomic_write_bytes`` needs the whole content in memory; a tracing file
for millions of events should not, so reporters stream through these writers.
"""

from __future__ import annotations

import io
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO


@contextmanager
def atomic_binary_writer(path: Path) -> Iterator[IO[bytes]]:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), 0o644)  # mkstemp's 0600 would hide reports from other users
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextmanager
def atomic_text_writer(path: Path) -> Iterator[IO[str]]:
    """UTF-8 text, no newline translation (csv writes its own line ends)."""
    with atomic_binary_writer(path) as raw:
        # newline="" keeps csv's "\n" as is; detaching leaves ``raw`` open for the rename.
        text = io.TextIOWrapper(raw, encoding="utf-8", newline="")
        try:
            yield text
            text.flush()
        finally:
            text.detach()
