"""Streamed atomic writes: big reports go to a temp file that is renamed only when complete.

``kerneltracer.jsonio.atomic_write_bytes`` needs the whole content in memory; a tracing file
for millions of events should not, so reporters stream through these writers.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from kerneltracer.jsonio import atomic_writer as atomic_binary_writer


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
