"""JSON and file helpers: orjson in and out, atomic writes, content hashes.

Every status, report and manifest goes through ``atomic_write_*`` so that a reader never
sees a half-written file: the data goes to a temp file in the same directory, is fsynced,
then renamed over the target (rename is atomic on POSIX within one filesystem).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import orjson

# mkstemp creates 0600 files; results should get the permissions a plain open() would give.
_UMASK = os.umask(0)
os.umask(_UMASK)
_FILE_MODE = 0o666 & ~_UMASK

_DUMP_OPTS = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS | orjson.OPT_SERIALIZE_NUMPY


def dumps(obj: Any, *, indent: bool = True) -> bytes:
    opts = _DUMP_OPTS if indent else orjson.OPT_SORT_KEYS | orjson.OPT_SERIALIZE_NUMPY
    return orjson.dumps(obj, option=opts, default=_default)


def _default(obj: Any) -> Any:
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, set | frozenset):
        return sorted(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def loads(data: bytes | str) -> Any:
    return orjson.loads(data)


def read_json(path: Path) -> Any:
    return orjson.loads(Path(path).read_bytes())


@contextmanager
def atomic_writer(path: Path) -> Iterator[IO[bytes]]:
    """A binary file handle whose content appears at ``path`` only when the block succeeds.

    For content too big to hold in memory (streamed reports); small files use the
    ``atomic_write_*`` helpers below, which go through this.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, _FILE_MODE)
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def remove_orphaned_temps(directory: Path, *, skip: Iterable[Path] = ()) -> list[Path]:
    """Remove the temp files of atomic writes whose writer died before its rename.

    A SIGKILL (or a signal handler that exits) between ``mkstemp`` and ``os.replace``
    leaves ``.<name>.<random>.tmp`` (or a staging folder) behind; only a process that saw
    every writer of ``directory`` end may call this. ``skip``: folders other processes may
    be writing in, left as they are. Returns what was removed.
    """
    removed: list[Path] = []
    skipped = {Path(p) for p in skip}
    for root, dirs, files in os.walk(directory):
        dirs[:] = [d for d in dirs if Path(root, d) not in skipped]
        for name in files:
            if _is_temp(name):
                Path(root, name).unlink(missing_ok=True)
                removed.append(Path(root, name))
        for name in [d for d in dirs if _is_temp(d)]:  # staging folders, same naming
            shutil.rmtree(Path(root, name), ignore_errors=True)
            removed.append(Path(root, name))
            dirs.remove(name)
    return removed


def _is_temp(name: str) -> bool:
    return name.startswith(".") and name.endswith(".tmp")


def atomic_write_bytes(path: Path, data: bytes) -> None:
    with atomic_writer(path) as fh:
        fh.write(data)


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: Path, obj: Any, *, indent: bool = True) -> None:
    atomic_write_bytes(path, dumps(obj, indent=indent) + b"\n")


def atomic_write_jsonl(path: Path, rows: Iterable[Any]) -> None:
    atomic_write_bytes(path, b"".join(orjson.dumps(r, default=_default) + b"\n" for r in rows))


def _fsync_dir(directory: Path) -> None:
    # The rename itself is durable only once the directory entry is flushed.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def stable_hash(obj: Any, length: int = 16) -> str:
    """Short hash of a JSON-able object, independent of dict order."""
    return hashlib.sha256(
        orjson.dumps(obj, option=orjson.OPT_SORT_KEYS, default=_default)
    ).hexdigest()[:length]
