"""One guard for every reader of user files: what may be opened, and how much of it is read.

A user file can be a gzip bomb, a sparse file of NUL bytes, a device or a FIFO that never
ends. Every reader opens such files through :func:`open_input` / :func:`read_input`, which

- refuse at once what is not a regular file (directory, device, FIFO) and a plain file
  whose size is already above the limit;
- refuse a gzip whose trailer declares a decompressed size above the limit (the ISIZE
  field: exact for members below 4 GiB, and counting catches the rest) before parsing
  anything. The trailer is checked first: a truncated file ends in compressed bytes, which
  read as a random size, so the file is decompressed (ISA-L, output dropped) up to the
  limit and refused there, or said to be truncated or corrupt;
- say a gzip is truncated (its stream ends before its trailer) or corrupt (bad data, CRC),
  each in its own line: never "too large" for a file that is cut short;
- count the decompressed bytes as they are read and stop at the limit;
- for JSON readers (``json=True``), refuse at once a file whose first bytes cannot start a
  JSON document (NUL bytes, binary, text that is no JSON), before anything is buffered;
  for text readers (``text=True``), binary data with no line break in its first bytes (a
  sparse file), which a line reader would buffer whole as one line.

Event counts are bounded by :meth:`InputLimits.check_events`, called by readers that count
events (trace events, log records, JSONL rows). The limits come from the commands'
``--max-input-size`` / ``--max-events`` options, or ``KT_MAX_INPUT_SIZE`` /
``KT_MAX_EVENTS`` in the environment (which is how analysis worker processes see them).
"""

from __future__ import annotations

import gzip as gzip_module
import io
import os
import re
import stat
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TypedDict, Unpack, cast

from kerneltracer.environ import ENV_MAX_EVENTS, ENV_MAX_INPUT_SIZE, KtEnv
from kerneltracer.errors import InputFileError, InputTooLargeError, TruncatedInputError

DEFAULT_MAX_BYTES = 2 << 30
DEFAULT_MAX_EVENTS = 20_000_000
# Status files, manifests, configs, support lists: small by nature, whatever the flags say.
SMALL_FILE_BYTES = 64 << 20
SIZE_ENV = ENV_MAX_INPUT_SIZE
EVENTS_ENV = ENV_MAX_EVENTS
_GZIP_MAGIC = b"\x1f\x8b"
_SNIFF = 64 << 10
_BLOCK = 1 << 20
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*([KMGT]?)(?:I?B)?", re.IGNORECASE)
# JSON may start with whitespace and a UTF-8 byte-order mark; documents are objects or arrays.
_JSON_WS = b" \t\r\n"
_BOM = b"\xef\xbb\xbf"


# What a long read tells whoever watches it (a progress bar): bytes and lines read since
# the last call. Set by a command around its work, never by library code, which only
# reports; scoped to the block and the thread like jsonio's output sets.
ReadObserver = Callable[[int, int], None]
_READS: ContextVar[ReadObserver | None] = ContextVar("kerneltracer_reads", default=None)


@contextmanager
def observing_reads(observer: ReadObserver) -> Iterator[None]:
    """Inside the block, every reader that reports (:func:`note_read`) calls ``observer``."""
    token = _READS.set(observer)
    try:
        yield
    finally:
        _READS.reset(token)


def note_read(nbytes: int, nlines: int = 0) -> None:
    """A reader of user files has read ``nbytes`` (``nlines`` lines) more."""
    observer = _READS.get()
    if observer is not None:
        observer(nbytes, nlines)


def parse_size(text: str) -> int | None:
    """``512M``, ``8G``, ``1.5GiB``, ``1024`` → bytes; None if it is not a size."""
    match = _SIZE.fullmatch(text.strip())
    if match is None:
        return None
    return int(float(match.group(1)) * _UNITS[match.group(2).upper()])


def format_size(n: int) -> str:
    for unit in ("T", "G", "M", "K"):
        if n >= _UNITS[unit] and n % (_UNITS[unit] // 1024 or 1) == 0:
            value = n / _UNITS[unit]
            return f"{value:g} {unit}iB"
    return f"{n} bytes"


@dataclass(frozen=True)
class InputLimits:
    """Bounds on one input file: decompressed bytes and events (None: unbounded)."""

    max_bytes: int | None = DEFAULT_MAX_BYTES
    max_events: int | None = DEFAULT_MAX_EVENTS
    adjustable: bool = True  # False: a fixed bound the flags do not move (metadata files)

    @classmethod
    def from_env(cls, env: KtEnv | None = None) -> InputLimits:
        """The limits the environment sets (read now when ``env`` is None); a malformed
        value is an error naming it."""
        env = KtEnv.read() if env is None else env
        size, events = env.max_input_size, env.max_events
        max_bytes: int | None = DEFAULT_MAX_BYTES
        max_events: int | None = DEFAULT_MAX_EVENTS
        if size:
            parsed = parse_size(size)
            if parsed is None:
                raise InputFileError(f"{SIZE_ENV}={size!r} is not a size (e.g. 512M, 8G, 0)")
            max_bytes = parsed or None
        if events:
            if not events.isdigit():
                raise InputFileError(f"{EVENTS_ENV}={events!r} is not a count (e.g. 50000000, 0)")
            max_events = int(events) or None
        return cls(max_bytes=max_bytes, max_events=max_events)

    def env(self) -> dict[str, str]:
        """Environment entries that make :meth:`from_env` return these limits."""
        return {SIZE_ENV: str(self.max_bytes or 0), EVENTS_ENV: str(self.max_events or 0)}

    def check_bytes(self, path: Path, n: int, what: str = "input file") -> None:
        if self.max_bytes is None or n <= self.max_bytes:
            return
        if not self.adjustable:
            raise InputTooLargeError(
                f"{path}: more than {format_size(self.max_bytes)}, too large for a {what}"
            )
        raise InputTooLargeError(
            f"{path}: more than {format_size(self.max_bytes)} once decompressed (raise the "
            f"limit with --max-input-size or {SIZE_ENV}; 0 = none)"
        )

    def check_events(self, path: Path, n: int, what: str = "events") -> None:
        if self.max_events is not None and n > self.max_events:
            raise InputTooLargeError(
                f"{path}: more than {self.max_events:,} {what} (raise the limit with "
                f"--max-events or {EVENTS_ENV}; 0 = none)"
            )


SMALL_FILE = InputLimits(max_bytes=SMALL_FILE_BYTES, adjustable=False)


def check_input_file(path: Path, what: str = "input file") -> os.stat_result:
    """The file's stat if it is a regular file we may read; else one line saying why not."""
    path = Path(path)
    try:
        st = path.stat()
    except FileNotFoundError:
        raise InputFileError(f"{what} {path} does not exist") from None
    except OSError as exc:
        raise InputFileError(f"{what} {path}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise InputFileError(f"{what} {path} is a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise InputFileError(f"{what} {path} is not a regular file (a device, FIFO or socket)")
    return st


def open_input(
    path: Path,
    limits: InputLimits | None = None,
    *,
    what: str = "input file",
    json: bool = False,
    text: bool = False,
    gzip: bool = True,
) -> IO[bytes]:
    """A binary stream of ``path`` (decompressed if it is a gzip) that stops at the limit.

    With ``json`` the first bytes must be able to start a JSON object or array; with
    ``text`` they must not be binary data without a line break.
    """
    path = Path(path)
    limits = InputLimits.from_env() if limits is None else limits
    st = check_input_file(path, what)
    try:
        raw = open(path, "rb")  # noqa: SIM115 - handed to the caller inside the stream
    except OSError as exc:
        raise InputFileError(f"{what} {path}: {exc.strerror or exc}") from None
    try:
        stream, declared = _stream(path, raw, st.st_size, limits, gzip=gzip, what=what)
        if json:
            check_json_start(path, stream.peek(_SNIFF))
        if text:
            check_text_start(path, stream.peek(_SNIFF), what)
        # After the first-bytes checks, which refuse most bombs (NUL bytes) at once.
        if limits.max_bytes is not None and declared > limits.max_bytes:
            _check_gzip_through(path, limits, what)
    except BaseException:
        raw.close()
        raise
    return stream


def input_position(stream: IO[bytes]) -> int:
    """How far into the file on disk a stream from :func:`open_input` has read (compressed
    bytes for a gzip, read ahead by a buffer): progress against the file's size."""
    counted = getattr(stream, "raw", None)
    return counted.position() if isinstance(counted, _Counted) else 0


class _OpenOptions(TypedDict, total=False):
    """:func:`open_input`'s keywords (its defaults apply), for the functions that pass them on."""

    what: str
    json: bool
    text: bool
    gzip: bool


def read_input(
    path: Path, limits: InputLimits | None = None, **options: Unpack[_OpenOptions]
) -> bytes:
    """The whole (decompressed) content of ``path``, within the limit (``options``: those of
    :func:`open_input`)."""
    with open_input(path, limits, **options) as fh:
        return fh.read()


def read_input_text(
    path: Path, limits: InputLimits | None = None, *, what: str = "input file"
) -> str:
    """``path`` as UTF-8 text; invalid UTF-8 is an error naming the line and column."""
    data = read_input(path, limits, what=what, gzip=False)
    return decode_utf8(path, data)


def decode_utf8(path: Path, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise InputFileError(
            f"{path}:{line}: not UTF-8 text (byte 0x{data[exc.start]:02x} at column {col})"
        ) from None


def check_json_start(path: Path, head: bytes) -> None:
    """Refuse data whose first bytes cannot start a JSON object or array."""
    body = head[len(_BOM) :] if head.startswith(_BOM) else head
    start = body.lstrip(_JSON_WS)
    if start[:1] in (b"{", b"["):
        return
    if not start and len(body) < _SNIFF:
        raise InputFileError(f"{path}: empty, not a JSON document")
    if not start:
        raise InputFileError(f"{path}: only whitespace in its first {_SNIFF >> 10} KiB, not JSON")
    raise InputFileError(f"{path}: not a JSON document (starts with {start[:16]!r})")


def check_text_start(path: Path, head: bytes, what: str = "text file") -> None:
    """Refuse binary data without line breaks (a sparse file, an image): a line reader
    would hold all of it as one line. Garbage lines between good ones are the parsers'
    to count, so a NUL byte alone is no reason."""
    if binary_without_lines(head):
        raise InputFileError(f"{path}: binary data with no line break, not a {what}")


def binary_without_lines(data: bytes) -> bool:
    """What :func:`check_text_start` refuses, given the first bytes of a file."""
    head = data[:_SNIFF]
    return b"\0" in head and b"\n" not in head


def _stream(
    path: Path, raw: IO[bytes], size: int, limits: InputLimits, *, gzip: bool, what: str
) -> tuple[io.BufferedReader, int]:
    """The counted stream, and the decompressed size a gzip's trailer declares (0: none)."""
    head = raw.read(2)
    raw.seek(0)
    declared = 0
    if gzip and head == _GZIP_MAGIC:
        declared = _gzip_isize(raw, size)
        # ISA-L's reader: the same format, decompressed in a third of zlib's time.
        from isal import igzip

        source: IO[bytes] = cast(IO[bytes], igzip.IGzipFile(fileobj=raw, mode="rb"))
    else:
        limits.check_bytes(path, size, what)
        source = raw
    counted = _Counted(path, source, raw, limits, what)
    return io.BufferedReader(counted, buffer_size=_BLOCK), declared


def _gzip_isize(raw: IO[bytes], size: int) -> int:
    """The decompressed size a single-member gzip declares (mod 4 GiB); 0 if unknown."""
    if size < 18:
        return 0
    raw.seek(size - 4)
    isize = int.from_bytes(raw.read(4), "little")
    raw.seek(0)
    return isize


def _check_gzip_through(path: Path, limits: InputLimits, what: str) -> None:
    """Decompress ``path`` and drop the output until the limit (too large), the end of the
    file before the end of the stream (truncated), bad data (corrupt) or a sound end (the
    trailer lied: a second member); ISA-L does a GiB in about half a second."""
    from isal import igzip  # imported here: most commands never need it
    from isal.igzip_lib import IsalError

    bad_data = cast("type[Exception]", IsalError)  # the stub declares an instance, not a class
    count = 0
    with igzip.IGzipFile(path, mode="rb") as reader, _gzip_errors(path):
        try:
            while chunk := reader.read(_BLOCK):
                count += len(chunk)
                limits.check_bytes(path, count, what)
        except bad_data as exc:  # ISA-L's bad-data error, zlib's for the message below
            raise zlib.error(str(exc)) from None


@contextmanager
def _gzip_errors(path: Path) -> Iterator[None]:
    """Decompression errors as one line each: truncated (no limit to raise) or corrupt."""
    try:
        yield
    except EOFError:  # the compressed stream or its trailer ends with the file
        raise TruncatedInputError(
            f"{path}: truncated gzip file (it ends before its compressed stream does: "
            "an interrupted copy or download?)"
        ) from None
    except (zlib.error, gzip_module.BadGzipFile, _isal_error()) as exc:
        raise InputFileError(f"{path}: corrupt gzip data ({exc})") from None


def _isal_error() -> type[Exception]:
    from isal.igzip_lib import IsalError

    return cast("type[Exception]", IsalError)  # the stub declares an instance, not a class


class _Counted(io.RawIOBase):
    """Counts what ``source`` yields and stops at the limit; gzip errors become one line.

    GzipFile.read(n) decompresses at most n bytes per call, so a bomb costs one buffer of
    memory until the count reaches the limit.
    """

    def __init__(
        self, path: Path, source: IO[bytes], raw: IO[bytes], limits: InputLimits, what: str
    ) -> None:
        self._what = what
        self._path = path
        self._source = source
        self._raw = raw
        self._limits = limits
        self.count = 0

    def readable(self) -> bool:
        return True

    def position(self) -> int:
        return self._raw.tell()

    def readinto(self, buf: memoryview) -> int:  # type: ignore[override]
        with _gzip_errors(self._path):
            data = self._source.read(len(buf))
        n = len(data)
        buf[:n] = data
        self.count += n
        self._limits.check_bytes(self._path, self.count, self._what)
        return n

    def close(self) -> None:
        self._source.close()
        self._raw.close()
        super().close()
