"""Per-tracer readers: one job's outputs -> per-op rows (calls, signatures, self time).

Each reader takes a finished job and returns its ops aggregated by name. A file that is
missing, truncated or malformed raises :class:`SourceError` with a one-line reason; the
caller records it as an unreadable input and goes on with the other jobs.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import orjson

from kerneltracer.coverage.scan import JobRef

DISPATCH_SUMMARY = "dispatch_summary.json"
PROFILER_AVERAGES = "key_averages.csv"
VLLM_OP_TABLE = "op_table.csv"


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


def _output_path(job: JobRef, name: str) -> tuple[Path, str]:
    # Prefer the file the status lists (a tracer may nest it), else the conventional place.
    rel = next((o for o in job.outputs if o == name or o.endswith(f"/{name}")), name)
    return job.job_dir / rel, rel


def _read_bytes(job: JobRef, name: str) -> tuple[bytes, str]:
    path, rel = _output_path(job, name)
    try:
        return path.read_bytes(), rel
    except FileNotFoundError:
        raise SourceError(rel, "missing") from None
    except OSError as exc:
        raise SourceError(rel, f"unreadable ({exc.strerror or exc})") from None


def _count(value: object, rel: str, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SourceError(rel, f"{what} is not a non-negative integer: {value!r}")
    return value


def _number(text: str | None, rel: str, what: str) -> float:
    try:
        value = float(text or 0)
    except ValueError:
        raise SourceError(rel, f"{what} is not a number: {text!r}") from None
    if not math.isfinite(value):
        raise SourceError(rel, f"{what} is not finite: {text!r}")
    return value


def read_dispatch(job: JobRef) -> list[OpRow]:
    """torch_dispatch: ``dispatch_summary.json`` ops -> calls and distinct input signatures."""
    data, rel = _read_bytes(job, DISPATCH_SUMMARY)
    try:
        summary = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise SourceError(rel, f"not valid JSON ({exc})") from None
    ops = summary.get("ops") if isinstance(summary, dict) else None
    if not isinstance(ops, dict):
        raise SourceError(rel, "has no 'ops' object")
    rows = []
    for op, entry in ops.items():
        if not isinstance(entry, dict):
            raise SourceError(rel, f"entry for {op!r} is not an object")
        calls = _count(entry.get("calls"), rel, f"calls of {op!r}")
        sigs = _count(entry.get("signatures"), rel, f"signatures of {op!r}")
        rows.append(OpRow(str(op), calls, sigs, None))
    return rows


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


def read_profiler(job: JobRef) -> list[OpRow]:
    """torch_profiler: ``key_averages.csv`` rows (name x input shapes) aggregated by name.

    The time is the self device time where the op ran on a device (non-zero), else its self
    CPU time; the ``ProfilerStep*`` step annotations are not ops and are left out.
    """
    data, rel = _read_bytes(job, PROFILER_AVERAGES)
    cols = ("name", "calls", "self_cpu_time_total_us", "self_device_time_total_us")
    acc: dict[str, list[float]] = {}  # name -> [calls, self cpu us, self device us]
    try:
        for row in _csv_rows(data, rel, cols):
            name = row["name"]
            if not name or name.startswith("ProfilerStep"):
                continue
            calls = _number(row["calls"], rel, f"calls of {name!r}")
            entry = acc.setdefault(name, [0.0, 0.0, 0.0])
            entry[0] += calls
            entry[1] += _number(row["self_cpu_time_total_us"], rel, f"self cpu time of {name!r}")
            entry[2] += _number(row["self_device_time_total_us"], rel, f"device time of {name!r}")
    except csv.Error as exc:
        raise SourceError(rel, f"malformed CSV ({exc})") from None
    return [OpRow(name, int(c), None, d if d > 0 else cpu) for name, (c, cpu, d) in acc.items()]


def read_vllm(job: JobRef) -> list[OpRow]:
    """vllm_profiler: ``op_table.csv`` (name,kind,count,total_us,self_us,avg_us), by name."""
    data, rel = _read_bytes(job, VLLM_OP_TABLE)
    acc: dict[str, list[float]] = {}
    try:
        for row in _csv_rows(data, rel, ("name", "kind", "count", "self_us")):
            name = row["name"]
            if not name:
                continue
            entry = acc.setdefault(name, [0.0, 0.0])
            entry[0] += _number(row["count"], rel, f"count of {name!r}")
            entry[1] += _number(row["self_us"], rel, f"self time of {name!r}")
    except csv.Error as exc:
        raise SourceError(rel, f"malformed CSV ({exc})") from None
    return [OpRow(name, int(c), None, t) for name, (c, t) in acc.items()]


# tracer name -> reader; the tracers whose outputs feed the coverage.
READERS: dict[str, Callable[[JobRef], list[OpRow]]] = {
    "torch_dispatch": read_dispatch,
    "torch_profiler": read_profiler,
    "vllm_profiler": read_vllm,
}
PROFILED_SOURCES = frozenset({"torch_profiler", "vllm_profiler"})
