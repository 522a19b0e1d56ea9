"""Readers per artefact kind: one job's outputs -> per-op rows (calls, signatures, self time).

A job is read from the best op-level artefact it has (:data:`READERS`, best first), whichever
tracer wrote it. Each reader takes a finished job and the artefacts of its kind and returns
its ops aggregated by name, plus the count of
bad rows it skipped, by kind (a negative call count, a time that is not a number…). A file
that is missing, truncated, malformed as a whole, or whose rows are all bad raises
:class:`SourceError` with a one-line reason; the caller records it as an unreadable input
and goes on with the other jobs.
"""

from __future__ import annotations

import csv
import gzip
import io
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import orjson

from kerneltracer.core.artefacts import ArtefactKind, select
from kerneltracer.core.dispatch_row import MAX_COUNT, is_count
from kerneltracer.coverage.scan import JobRef
from kerneltracer.errors import InputFileError
from kerneltracer.inputguard import read_input


class SourceError(Exception):
    """One input file of one job could not be used; ``path`` is relative to the job dir."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


@dataclass(frozen=True)
class OpRow:
    op: str
    calls: int
    signatures: int | None
    self_time_us: float | None


def _read_bytes(job: JobRef, rel: str) -> tuple[bytes, str]:
    path = job.job_dir / rel
    if not path.exists():
        raise SourceError(rel, "missing")
    try:
        # Through the input guard: a job dir may come from anywhere (copied, hand-edited).
        return read_input(path, what="job output", text=True, gzip=False), rel
    except InputFileError as exc:
        raise SourceError(rel, f"unreadable ({exc})") from None


class _RowError(Exception):
    def __init__(self, kind: str, detail: str) -> None:
        self.kind = kind
        self.detail = detail


@dataclass
class SourceRows:
    """A reader's result: the op rows and the bad rows it skipped, by kind."""

    rows: list[OpRow]
    bad: dict[str, int] = field(default_factory=dict)
    first_bad: str = ""  # the first bad row's reason, for messages
    path: str = ""  # the file read, relative to the job dir

    def skip(self, err: _RowError) -> None:
        self.bad[err.kind] = self.bad.get(err.kind, 0) + 1
        self.first_bad = self.first_bad or err.detail

    def checked(self, rel: str) -> SourceRows:
        """Self, unless every row was bad: then the file gives nothing and is a problem."""
        if self.bad and not self.rows:
            n = sum(self.bad.values())
            raise SourceError(rel, f"no usable row ({n} bad; first: {self.first_bad})")
        self.path = rel
        return self


def _count(value: object, what: str) -> int:
    if not is_count(value):
        raise _RowError(
            "count_not_a_count", f"{what} is not a non-negative integer up to 2^48: {value!r:.60}"
        )
    return value


def _calls(text: str | None, what: str) -> float:
    """A call count of a CSV table: a number (profilers write floats) from 0 to 2^48."""
    value = _number(text, what)
    if not 0 <= value <= MAX_COUNT:
        raise _RowError("count_not_a_count", f"{what} is not a count up to 2^48: {text!r}")
    return value


def _number(text: str | None, what: str) -> float:
    try:
        value = float(text or 0)
    except ValueError:
        raise _RowError("number_not_numeric", f"{what} is not a number: {text!r}") from None
    if not math.isfinite(value):
        raise _RowError("number_not_finite", f"{what} is not finite: {text!r}")
    return value


def _read_dispatch(job: JobRef, rels: list[str]) -> SourceRows:
    """``dispatch_summary`` (JSON ``ops``) -> calls and distinct input signatures per op."""
    data, rel = _read_bytes(job, rels[0])
    try:
        summary = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise SourceError(rel, f"not valid JSON ({exc})") from None
    ops = summary.get("ops") if isinstance(summary, dict) else None
    if not isinstance(ops, dict):
        raise SourceError(rel, "has no 'ops' object")
    out = SourceRows([])
    for op, entry in ops.items():
        try:
            if not isinstance(entry, dict):
                raise _RowError("entry_not_an_object", f"entry for {op!r} is not an object")
            calls = _count(entry.get("calls"), f"calls of {op!r}")
            sigs = _count(entry.get("signatures"), f"signatures of {op!r}")
        except _RowError as err:
            out.skip(err)
            continue
        out.rows.append(OpRow(str(op), calls, sigs, None))
    return out.checked(rel)


def _csv_rows(data: bytes, rel: str, required: Iterable[str]) -> csv.DictReader[str]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise SourceError(rel, "is not UTF-8 text") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    missing = sorted(set(required) - set(reader.fieldnames or ()))
    if missing:
        raise SourceError(rel, f"lacks column(s) {', '.join(missing)}")
    return reader


def _read_profiler(job: JobRef, rels: list[str]) -> SourceRows:
    """``key_averages`` CSV rows (name x input shapes) aggregated by name.

    The time is the self device time where the op ran on a device (non-zero), else its self
    CPU time; the ``ProfilerStep*`` step annotations are not ops and are left out.
    """
    data, rel = _read_bytes(job, rels[0])
    cols = ("name", "calls", "self_cpu_time_total_us", "self_device_time_total_us")
    acc: dict[str, list[float]] = {}  # name -> [calls, self cpu us, self device us]
    out = SourceRows([])
    try:
        for row in _csv_rows(data, rel, cols):
            name = row["name"]
            if not name or name.startswith("ProfilerStep"):
                continue
            try:
                values = [
                    _calls(row["calls"], f"calls of {name!r}"),
                    _number(row["self_cpu_time_total_us"], f"self cpu time of {name!r}"),
                    _number(row["self_device_time_total_us"], f"device time of {name!r}"),
                ]
            except _RowError as err:
                out.skip(err)
                continue
            entry = acc.setdefault(name, [0.0, 0.0, 0.0])
            for i, v in enumerate(values):
                entry[i] += v
    except csv.Error as exc:
        raise SourceError(rel, f"malformed CSV ({exc})") from None
    out.rows = [OpRow(name, int(c), None, d if d > 0 else cpu) for name, (c, cpu, d) in acc.items()]
    return out.checked(rel)


def _read_op_table(job: JobRef, rels: list[str]) -> SourceRows:
    """``op_table`` CSV (name,kind,count,total_us,self_us,avg_us), by name."""
    data, rel = _read_bytes(job, rels[0])
    acc: dict[str, list[float]] = {}
    out = SourceRows([])
    try:
        for row in _csv_rows(data, rel, ("name", "kind", "count", "self_us")):
            name = row["name"]
            if not name:
                continue
            try:
                count = _calls(row["count"], f"count of {name!r}")
                self_us = _number(row["self_us"], f"self time of {name!r}")
            except _RowError as err:
                out.skip(err)
                continue
            entry = acc.setdefault(name, [0.0, 0.0])
            entry[0] += count
            entry[1] += self_us
    except csv.Error as exc:
        raise SourceError(rel, f"malformed CSV ({exc})") from None
    out.rows = [OpRow(name, int(c), None, t) for name, (c, t) in acc.items()]
    return out.checked(rel)


def _read_chrome_traces(job: JobRef, rels: list[str]) -> SourceRows:
    """Chrome traces: the op/kernel events of every trace (one per rank), self time by name."""
    from kerneltracer.core.op_table import load_events, op_table

    acc: dict[str, list[float]] = {}
    for rel in rels:
        try:
            rows = op_table(load_events(job.job_dir / rel))
        except FileNotFoundError:
            raise SourceError(rel, "missing") from None
        except (gzip.BadGzipFile, EOFError, ValueError, TypeError, AttributeError) as exc:
            # gzip, JSON and shape errors: the file as a whole is not a chrome trace
            raise SourceError(rel, f"not a readable chrome trace ({type(exc).__name__})") from None
        except OSError as exc:
            raise SourceError(rel, f"unreadable ({exc.strerror or exc})") from None
        for row in rows:
            entry = acc.setdefault(row.name, [0.0, 0.0])
            entry[0] += row.count
            entry[1] += row.self_us
    out = SourceRows([OpRow(name, int(c), None, t) for name, (c, t) in acc.items()])
    out.path = rels[0]
    return out


Reader = Callable[[JobRef, list[str]], SourceRows]

# Artefact kind -> reader, best first: a job is read from the first of these kinds it has.
READERS: dict[ArtefactKind, Reader] = {
    ArtefactKind.DISPATCH_SUMMARY: _read_dispatch,
    ArtefactKind.KEY_AVERAGES: _read_profiler,
    ArtefactKind.OP_TABLE: _read_op_table,
    ArtefactKind.CHROME_TRACE: _read_chrome_traces,
}
SOURCE_KINDS = tuple(READERS)


def source_artefacts(job: JobRef) -> tuple[ArtefactKind, list[str]] | None:
    """The kind a job's coverage is read from and its artefacts of that kind, or None."""
    kinds = job.output_kinds()
    for kind in READERS:
        rels = select(job.outputs, kinds, (kind,))
        if rels:
            return kind, rels
    return None
