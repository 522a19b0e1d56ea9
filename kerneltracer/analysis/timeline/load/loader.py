"""Load a chrome trace (torch.profiler / Kineto / vLLM) into compact columns.

A naive ``json.load`` keeps every event as a dict (with its ``args`` dict) alive at once,
which costs several hundred bytes per event before any analysis starts. Instead the file is
decompressed in blocks and the ``traceEvents`` array is parsed in batches cut at top-level
``}, {`` boundaries; each batch is folded into numpy columns and dropped (see builder.py).
A cut that lands inside a nested object or string leaves the batch unbalanced, the parser
rejects it and an earlier cut is tried, so the heuristic can cost speed but never
correctness. The metadata keys and the last batch are parsed with the document's tail.

The file is opened through the input guard (kerneltracer.inputguard): a file that cannot
start a JSON document is refused before anything is buffered, decompressed bytes and events
are bounded, and text that never yields a batch cut (one huge string, a sea of whitespace)
is refused once it passes ``_MAX_PENDING`` instead of growing the buffer without end.
"""

from __future__ import annotations

import errno
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import IO, Any

import numpy as np

from kerneltracer.analysis.timeline.load.builder import PH_COMPLETE, PH_INSTANT, Builder
from kerneltracer.analysis.timeline.load.events import OpArgsStore, loads_lenient
from kerneltracer.analysis.timeline.model.arrays import code_mask
from kerneltracer.core.heap import release_free_heap
from kerneltracer.errors import TraceLoadError
from kerneltracer.inputguard import InputLimits, input_position, open_input

_BLOCK = 4 << 20
_MAX_BATCH_RETRIES = 8
# No chrome-trace event comes near this; more text without a cut is not a trace.
_MAX_PENDING = 32 << 20

__all__ = [
    "PH_COMPLETE",
    "PH_INSTANT",
    "ChromeTrace",
    "LoadProgress",
    "load_chrome_trace",
    "release_free_heap",
]


@dataclass(frozen=True)
class LoadProgress:
    """How far a load has come: events read so far (used or not), and the bytes of the file
    on disk read (compressed bytes for a gzip) out of its size; ``done`` on the last call."""

    path: Path
    events: int
    done_bytes: int
    total_bytes: int
    done: bool = False


@dataclass
class ChromeTrace:
    """One trace file's events as parallel numpy columns (one row per X or instant event)."""

    path: Path
    metadata: dict[str, Any]
    names: list[str]
    categories: list[str]  # normalised; raw spellings in raw_categories
    raw_categories: list[str]
    ph: np.ndarray  # uint8: PH_COMPLETE / PH_INSTANT
    cat: np.ndarray  # int32 index into categories
    name: np.ndarray  # int32 index into names
    ts: np.ndarray  # float64 µs
    dur: np.ndarray  # float64 µs, 0 for instants
    pid: np.ndarray  # int32 index into threads' pid labels
    tid: np.ndarray  # int32 index into thread labels
    # Ids: int32 when all fit (see ``columns.concat``), else int64; -1 when absent or not
    # an integer. Widen (``astype(np.int64)``) before arithmetic that could pass 32 bits.
    stream: np.ndarray
    correlation: np.ndarray
    device: np.ndarray
    args: Mapping[int, dict[str, Any]]  # row -> args, only for rows in _KEEP_ARGS categories
    thread_labels: list[str]
    process_names: dict[str, str] = field(default_factory=dict)
    thread_names: dict[tuple[str, str], str] = field(default_factory=dict)
    float_timestamps: bool = False
    # Only with ``load_chrome_trace(op_args=True)``: host ops' shape args by row, and the
    # ac2g flow events as columns (id, start, pid, tid, ts; pid/tid index thread_labels).
    op_args: OpArgsStore = field(default_factory=OpArgsStore)
    flows: dict[str, np.ndarray] | None = None
    # What op attribution reads of the flows, once ``attribution.settle_flows`` has replaced
    # them: the GPU event rows their flow links, and the runtime call row of each.
    flow_launch: tuple[np.ndarray, np.ndarray] | None = None
    # Also only then: runtime launch call row -> the kernel name its args carry (ROCm's do).
    launch_kernels: dict[int, str] = field(default_factory=dict)
    bad_events: dict[str, int] = field(default_factory=dict)  # malformed, by kind
    skipped_events: dict[str, int] = field(default_factory=dict)  # valid but unused phases

    @property
    def bad_count(self) -> int:
        return sum(self.bad_events.values())

    def __len__(self) -> int:
        return int(self.ts.shape[0])

    @cached_property
    def end(self) -> np.ndarray:
        return self.ts + self.dur

    def category_mask(self, cats: frozenset[str] | set[str]) -> np.ndarray:
        ids = [i for i, c in enumerate(self.categories) if c in cats]
        return code_mask(self.cat, ids, len(self.categories))

    def name_mask(self, ids: Iterable[int], rows: np.ndarray | None = None) -> np.ndarray:
        """Whether each row's (or each of ``rows``') name is one of the name ids ``ids``."""
        return code_mask(self.name if rows is None else self.name[rows], ids, len(self.names))

    @property
    def rank(self) -> int | None:
        info = self.metadata.get("distributedInfo")
        if isinstance(info, dict) and isinstance(info.get("rank"), int):
            return int(info["rank"])
        return None

    @property
    def device_properties(self) -> list[dict[str, Any]]:
        props = self.metadata.get("deviceProperties")
        return [p for p in props if isinstance(p, dict)] if isinstance(props, list) else []


def count_text(counts: dict[str, int], what: str = "bad event") -> str:
    """``3 bad events (2 negative_duration, 1 missing_name)``; ``no bad events`` if none."""
    total = sum(counts.values())
    if not total:
        return f"no {what}s"
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1]))
    return f"{total} {what}{'s' if total != 1 else ''} ({kinds})"


def load_chrome_trace(
    path: Path | str,
    *,
    strict: bool = False,
    limits: InputLimits | None = None,
    op_args: bool = False,
    progress: Callable[[LoadProgress], object] | None = None,
) -> ChromeTrace:
    """Load ``path``; raise TraceLoadError if it has no usable timed event, or with
    ``strict`` if any event is malformed (the error carries the counts by kind).

    ``limits`` bound the decompressed size and the event count (default: the environment's,
    see kerneltracer.inputguard); InputTooLargeError says which was passed. ``op_args``
    keeps what op attribution needs: host ops' shapes and ids, and the ac2g flow events.
    ``progress`` is called after each batch of events (a few MiB of text) and once at the end.
    """
    path = Path(path)
    limits = InputLimits.from_env() if limits is None else limits
    builder = Builder(path, op_args=op_args)
    try:
        with open_input(path, limits, what="trace file", json=True) as fh:
            report = _reporter(path, fh, builder, progress)
            metadata = _parse_stream(fh, builder, limits, report)
            report(done=True)
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            # The trace is fine: its args texts spill to a temp file (load/packed.py).
            raise TraceLoadError(
                f"{path}: no space left for the temporary file of its args in "
                f"{tempfile.gettempdir()} (set TMPDIR to a directory with room)"
            ) from exc
        raise TraceLoadError(f"{path}: not a readable chrome trace ({exc})") from exc
    except (ValueError, RecursionError) as exc:
        raise TraceLoadError(f"{path}: not a readable chrome trace ({exc})") from exc
    cols = builder.finish()
    trace = ChromeTrace(path=path, metadata=metadata, **cols)
    del builder, cols
    release_free_heap()
    if strict and trace.bad_count:
        raise TraceLoadError(f"{path}: --strict: {count_text(trace.bad_events)}")
    if not (trace.ph == PH_COMPLETE).any():
        raise TraceLoadError(
            f"{path}: no usable timed event (complete 'X' or matched 'B'/'E' with a numeric "
            f"timestamp and a non-negative duration): {len(trace)} usable event(s), "
            f"{count_text(trace.bad_events)}"
        )
    return trace


def _reporter(
    path: Path, fh: IO[bytes], builder: Builder, progress: Callable[[LoadProgress], object] | None
) -> Callable[..., None]:
    """``report()`` after a batch, ``report(done=True)`` at the end: calls ``progress``."""
    if progress is None:
        return lambda done=False: None
    total = path.stat().st_size

    def report(done: bool = False) -> None:
        read = total if done else min(input_position(fh), total)
        progress(LoadProgress(path, builder.events_seen, read, total, done))

    return report


def _parse_stream(
    fh: IO[bytes], builder: Builder, limits: InputLimits, report: Callable[[], None]
) -> dict[str, Any]:
    """Feed batches of events to ``builder``; return the document's non-event keys."""
    buf = b""
    prefix: bytes | None = None  # document text before the events array's "["
    eof = False
    while prefix is None and not eof:
        block = fh.read(_BLOCK)
        eof = not block
        buf += block
        prefix, buf = _split_prefix(buf)
        if prefix is None and len(buf) > _MAX_PENDING:
            raise TraceLoadError(
                f"{builder.path}: no traceEvents array in its first {_MAX_PENDING >> 20} MiB"
            )
    if prefix is None:  # no events array found: let the whole-document parse say why
        return _parse_document(buf, builder)
    # Blocks wait as pieces until one holds a possible cut, so text without any (whitespace,
    # a giant string) costs one scan per block, not a re-copy of everything pending.
    pending, size = [buf], len(buf)
    while not eof:
        block = fh.read(_BLOCK)
        eof = not block
        joint = pending[-1][-1:] + block[:1]
        pending.append(block)
        size += len(block)
        if not eof and (b"}," in block or joint == b"},"):
            rest = _consume_batches(b"".join(pending), builder)
            pending, size = [rest], len(rest)
            limits.check_events(builder.path, builder.events_seen)
            report()
        if size > _MAX_PENDING:
            raise TraceLoadError(
                f"{builder.path}: over {_MAX_PENDING >> 20} MiB of text without the end "
                "of an event: not a chrome trace"
            )
    metadata = _parse_tail(prefix, b"".join(pending), builder)
    limits.check_events(builder.path, builder.events_seen)
    return metadata


def _split_prefix(buf: bytes) -> tuple[bytes | None, bytes]:
    stripped = buf.lstrip()
    if stripped[:1] == b"[":
        return b"", stripped[1:]
    key = buf.find(b'"traceEvents"')
    if key < 0:
        return None, buf
    colon = buf.find(b":", key)
    bracket = buf.find(b"[", colon) if colon >= 0 else -1
    if bracket < 0:
        return None, buf
    return buf[: colon + 1], buf[bracket + 1 :]


def _consume_batches(buf: bytes, builder: Builder) -> bytes:
    cut = len(buf)
    for _ in range(_MAX_BATCH_RETRIES):
        cut = buf.rfind(b"},", 0, cut)
        if cut < 0:
            return buf
        # One copy of the batch's text (a few MiB), not a slice and then a concatenation.
        if builder.add_json_array(b"".join((b"[", memoryview(buf)[: cut + 1], b"]"))):
            return buf[cut + 2 :]
    return buf


def _parse_tail(prefix: bytes, rest: bytes, builder: Builder) -> dict[str, Any]:
    text = prefix + b"[" + rest
    try:
        doc = loads_lenient(text)
    except ValueError:
        if prefix:
            raise
        doc = loads_lenient(text.rstrip().rstrip(b",") + b"]")  # array form may omit "]"
    return _take_events(doc, builder)


def _parse_document(buf: bytes, builder: Builder) -> dict[str, Any]:
    return _take_events(loads_lenient(buf), builder)


def _take_events(doc: Any, builder: Builder) -> dict[str, Any]:
    if isinstance(doc, list):
        builder.add_dicts(doc)
        return {}
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise TraceLoadError(f"{builder.path}: JSON has no traceEvents array")
    builder.add_dicts(doc.pop("traceEvents"))
    return doc
