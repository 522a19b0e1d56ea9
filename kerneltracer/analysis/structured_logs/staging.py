"""Whole-directory atomic output: build in a hidden sibling, then swap it into place.

A reader never sees a half-written intermediate or report directory: either the old one or
the complete new one. Per-file fsync is skipped on purpose (thousands of small files); the
rename is the commit point.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kerneltracer.errors import UsageError


def _check_target(out: Path, overwrite: bool) -> None:
    if out.exists() and not out.is_dir():
        raise UsageError(f"output path {out} exists and is not a directory")
    if out.is_dir() and any(out.iterdir()) and not overwrite:
        raise UsageError(f"output directory {out} is not empty; pass --overwrite to replace it")


def _hidden(filename: str | bytes, out: Path) -> bool:
    """Whether ``filename`` is in one of our hidden folders beside ``out``."""
    rel = os.path.relpath(os.fsdecode(filename), out.parent)
    return rel.startswith(".") and not rel.startswith("..")


@contextmanager
def staged_dir(out: Path, overwrite: bool) -> Iterator[Path]:
    out = Path(out)
    _check_target(out, overwrite)
    out.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    try:
        yield stage
    except BaseException as exc:
        shutil.rmtree(stage, ignore_errors=True)
        if isinstance(exc, OSError) and (exc.filename is None or _hidden(exc.filename, out)):
            # A write's ENOSPC names no place; a hidden stage beside OUT, none a user knows.
            exc.filename = str(out)
        raise
    old: Path | None = None
    if out.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".old", dir=out.parent))
        old.rmdir()
        out.rename(old)
    stage.rename(out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def scratch_root(need: int = 0) -> str | None:
    """Memory-backed scratch for a throw-away intermediate when there is one with room
    for ``need`` bytes twice over: an intermediate is a directory per compile id plus a
    copy of every payload, and writing it to a busy disk, only to read it back once and
    delete it, costs more than the parse. None: the caller's own folder."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK | os.X_OK)):
        return None
    try:
        st = os.statvfs(shm)
    except OSError:
        return None
    return str(shm) if st.f_bavail * st.f_frsize > 2 * need + (256 << 20) else None
