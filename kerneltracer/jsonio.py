"""JSON and file helpers: orjson in and out, atomic writes, content hashes.

Every status, report and manifest goes through ``atomic_write_*`` so that a reader never
sees a half-written file: the data goes to a temp file in the same directory, is fsynced,
then renamed over the target (rename is atomic on POSIX within one filesystem).

A command that writes several files (a report, a corpus, a fleet table) writes them inside
:func:`outputs_all_or_none`: each file is still written to its temp file at once (that is
where a full disk shows), but the renames wait for the block to succeed, so a failure
leaves every target as it was (all outputs or none). An OS error of a write names the
directory written to, never a temp file or nothing.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
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


class OutputSet:
    """The files one command writes, made visible together (see :func:`outputs_all_or_none`).

    Holds each written temp file and its target until :meth:`commit`; :meth:`rollback`
    removes the temp files and the directories the set created.
    """

    def __init__(self, where: Path) -> None:
        self.where = Path(where)
        self.existed = self.where.is_dir()
        self._pending: dict[Path, Path] = {}  # target -> its written temp file
        self._trees: dict[Path, Path] = {}  # target folder -> its written temp folder
        self._removals: dict[Path, None] = {}
        self._made: list[Path] = []  # directories created, outermost first

    def make_dirs(self, directory: Path) -> None:
        missing = []
        probe = directory
        while not probe.exists() and probe != probe.parent:
            missing.append(probe)
            probe = probe.parent
        directory.mkdir(parents=True, exist_ok=True)
        self._made += reversed(missing)

    def adopt_dirs(self, made: list[Path]) -> None:
        self._made += [d for d in made if d not in self._made]

    def add(self, tmp: Path, target: Path) -> None:
        previous = self._pending.pop(target, None)
        if previous is not None:  # written twice: the last content wins
            previous.unlink(missing_ok=True)
        self._removals.pop(target, None)
        self._pending[target] = tmp

    def remove(self, target: Path) -> None:
        if target not in self._pending:
            self._removals[target] = None

    def add_tree(self, tmp: Path, target: Path) -> None:
        previous = self._trees.pop(target, None)
        if previous is not None:
            shutil.rmtree(previous, ignore_errors=True)
        self._trees[target] = tmp

    def commit(self) -> None:
        # Renames take no space: once every temp file is written, they go through.
        directories = {t.parent for t in self._pending} | {t.parent for t in self._trees}
        for target, tmp in list(self._trees.items()):
            try:
                _swap_tree(tmp, target)
            except OSError as exc:
                _name_directory(exc, target.parent, tmp)
                self.rollback()
                raise
            del self._trees[target]
        for target, tmp in list(self._pending.items()):
            try:
                os.replace(tmp, target)
            except OSError as exc:
                _name_directory(exc, target.parent, tmp)
                self.rollback()
                raise
            del self._pending[target]
        for target in self._removals:
            target.unlink(missing_ok=True)
        for directory in directories:
            _fsync_dir(directory)

    def rollback(self) -> None:
        for tmp in self._pending.values():
            tmp.unlink(missing_ok=True)
        self._pending.clear()
        for tmp in self._trees.values():
            shutil.rmtree(tmp, ignore_errors=True)
        self._trees.clear()
        made = [*self._made, *([] if self.existed else [self.where])]
        for directory in sorted(set(made), key=lambda p: len(p.parts), reverse=True):
            _remove_empty_tree(directory)


# The OutputSet of the `outputs_all_or_none` block the caller is in, if any. Scoped to the
# block (set on entry, reset on exit) and to the thread, so that every writer many calls
# below a command joins its set without each taking it as a parameter.
_OUTPUTS: ContextVar[OutputSet | None] = ContextVar("kerneltracer_outputs", default=None)


@contextmanager
def outputs_all_or_none(where: Path) -> Iterator[OutputSet]:
    """Every :func:`atomic_writer` (and :func:`remove_output`) inside the block takes
    effect together when the block succeeds; if it fails (a full disk, an error, an
    interrupt) no target changes, and the directories the block created are removed
    (``where`` too, if it did not exist).

    An OS error of the block without a place of its own (a write's ENOSPC) names ``where``.
    Code inside the block must not read back a file it wrote: it appears at the end.
    """
    outer = _OUTPUTS.get()
    if outer is not None:  # a writer's own block inside a command's: one set, the outer
        yield outer
        return
    outputs = OutputSet(where)
    token = _OUTPUTS.set(outputs)
    try:
        yield outputs
    except BaseException as exc:
        _OUTPUTS.reset(token)
        outputs.rollback()
        if isinstance(exc, OSError):
            _name_directory(exc, outputs.where)
        raise
    _OUTPUTS.reset(token)
    outputs.commit()


@dataclass(frozen=True)
class Handover:
    """A forked child's deferred outputs, for the parent's set (see :func:`child_outputs`)."""

    files: tuple[tuple[str, str], ...] = ()  # (temp file, target)
    made: tuple[str, ...] = ()  # directories created


@contextmanager
def child_outputs() -> Iterator[Callable[[], Handover]]:
    """For a forked child of a process inside :func:`outputs_all_or_none`: the child's
    writes are deferred into a set of its own, never committed there; the function yielded
    gives them to send back, and :func:`adopt_outputs` in the parent joins them to its set.
    Outside any set, writes happen at once and there is nothing to hand over."""
    parent = _OUTPUTS.get()
    if parent is None:
        yield Handover
        return
    own = OutputSet(parent.where)
    token = _OUTPUTS.set(own)
    try:
        yield lambda: Handover(
            tuple((str(tmp), str(target)) for target, tmp in own._pending.items()),
            tuple(str(d) for d in own._made),
        )
    except BaseException:
        own.rollback()
        raise
    finally:
        _OUTPUTS.reset(token)


def adopt_outputs(handover: Handover) -> None:
    """Join a forked child's deferred outputs to this process's set (or, outside one,
    make them visible now)."""
    outputs = _OUTPUTS.get()
    for tmp, target in handover.files:
        if outputs is None:
            os.replace(tmp, target)
        else:
            outputs.add(Path(tmp), Path(target))
    if outputs is not None:
        outputs.adopt_dirs([Path(d) for d in handover.made])


def remove_output(path: Path) -> None:
    """Remove an output that is no longer produced: at once, or, inside
    :func:`outputs_all_or_none`, when the block succeeds."""
    outputs = _OUTPUTS.get()
    if outputs is None:
        Path(path).unlink(missing_ok=True)
    else:
        outputs.remove(Path(path))


@contextmanager
def atomic_writer(path: Path, *, durable: bool = True) -> Iterator[IO[bytes]]:
    """A binary file handle whose content appears at ``path`` only when the block succeeds
    (and, inside :func:`outputs_all_or_none`, only when that block succeeds too).

    For content too big to hold in memory (streamed reports); small files use the
    ``atomic_write_*`` helpers below, which go through this. ``durable=False`` skips the
    fsyncs (a reader still sees the old file or the new one, never half of one): for a file
    that a crash of the machine makes useless anyway.
    """
    path = Path(path)
    outputs = _OUTPUTS.get()
    tmp = None
    try:
        if outputs is not None:
            outputs.make_dirs(path.parent)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.fchmod(fd, _FILE_MODE)
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        if outputs is not None:
            outputs.add(Path(tmp), path)
            return
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            _name_directory(exc, path.parent, tmp)
        raise
    if durable:
        _fsync_dir(path.parent)


def _name_directory(exc: OSError, directory: Path, tmp: Path | str | None = None) -> None:
    """Make ``exc`` name ``directory`` when it names no place (ENOSPC of a write) or only
    our temp file, whose name means nothing to a user."""
    if exc.filename is None or (tmp is not None and str(exc.filename) == str(tmp)):
        exc.filename = str(directory)


def _remove_empty_tree(directory: Path) -> None:
    """Remove ``directory`` and the directories under it, as long as they are empty."""
    if not directory.is_dir() or directory.is_symlink():
        return
    for root, dirs, _files in os.walk(directory, topdown=False):
        for name in dirs:
            with contextlib.suppress(OSError):
                Path(root, name).rmdir()
    with contextlib.suppress(OSError):
        directory.rmdir()


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


@contextmanager
def atomic_tree(target: Path) -> Iterator[Path]:
    """A folder of many small files that replaces ``target`` whole when the block
    succeeds (inside :func:`outputs_all_or_none`, when that block does): the block writes
    into the folder yielded, a hidden sibling of ``target``, with plain writes.

    One flush of the filesystem makes all of them durable before the swap, instead of
    an fsync per file (thousands of small files: seconds). A crash leaves the old folder
    or the whole new one, never a half-written one; files of an older folder that this
    one no longer has go with it.
    """
    target = Path(target)
    outputs = _OUTPUTS.get()
    if outputs is not None:
        outputs.make_dirs(target.parent)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        yield tmp
        _sync_filesystem(tmp)
        if outputs is not None:
            outputs.add_tree(tmp, target)
            return
        _swap_tree(tmp, target)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OSError):
            _name_directory(exc, target.parent, tmp)
        raise
    _fsync_dir(target.parent)


def _swap_tree(tmp: Path, target: Path) -> None:
    """Put the folder ``tmp`` at ``target``; an old ``target`` is moved aside, then removed."""
    os.chmod(tmp, 0o777 & ~_UMASK)  # mkdtemp's 0700 is no output's mode
    old = None
    if target.is_dir() and not target.is_symlink():
        old = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
        os.replace(target, old / target.name)
    try:
        os.replace(tmp, target)
    except OSError:
        if old is not None:
            os.replace(old / target.name, target)
            old.rmdir()
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


# Up to this many files, an fsync each is cheaper than a syncfs, which waits for every
# dirty page of the filesystem, other programs' too (0.2 s on a busy shared disk, against
# ~10 ms an fsync).
_FSYNC_EACH_UP_TO = 8


def _sync_filesystem(directory: Path) -> None:
    """Make every file written under ``directory`` durable: an fsync per file for a few,
    else one ``syncfs`` of its filesystem where Linux has it."""
    walked = list(os.walk(directory))
    if sum(len(files) for _root, _dirs, files in walked) > _FSYNC_EACH_UP_TO:
        fd = os.open(directory, os.O_RDONLY)
        try:
            if _syncfs(fd):
                return
        finally:
            os.close(fd)
    for root, _dirs, files in walked:
        for name in files:
            with open(Path(root, name), "rb") as fh:
                os.fsync(fh.fileno())
        _fsync_dir(Path(root))


def _syncfs(fd: int) -> bool:
    try:
        import ctypes
        import ctypes.util

        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return bool(libc.syncfs(fd) == 0)
    except (OSError, AttributeError):
        return False


def atomic_write_bytes(path: Path, data: bytes, *, durable: bool = True) -> None:
    with atomic_writer(path, durable=durable) as fh:
        fh.write(data)


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: Path, obj: Any, *, indent: bool = True, durable: bool = True) -> None:
    atomic_write_bytes(path, dumps(obj, indent=indent) + b"\n", durable=durable)


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
    import hashlib  # ~4 ms (OpenSSL's set-up): only for the commands that hash

    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def stable_hash(obj: Any, length: int = 16) -> str:
    """Short hash of a JSON-able object, independent of dict order."""
    import hashlib

    return hashlib.sha256(
        orjson.dumps(obj, option=orjson.OPT_SORT_KEYS, default=_default)
    ).hexdigest()[:length]
