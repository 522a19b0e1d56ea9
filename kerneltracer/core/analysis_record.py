"""``analysis/<name>/_ANALYSIS.json``: how one analysis of one job ended, and where it lives.

``kerneltracer analyze`` writes one record per (job, analysis) with
:func:`write_analysis_record`; everything that looks at analyses (the rerun check, the
report, the fleet op view) reads it with :func:`read_analysis_record`. Where the folder,
the record and the log are is the layout's (``JobPaths.analysis(name)``, an
:class:`~kerneltracer.core.layout.AnalysisPaths`).

Reading is lenient the way status files and manifests are: a record written by an older
runner (no ``schema_version``, no stamp, absolute ``files``) still reads, a field of the
wrong type reads as absent, and a record that cannot be used at all (missing, truncated,
not an object, an unknown state) is an :class:`AnalysisProblem` naming why, never an
exception.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path, PurePosixPath
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError

from kerneltracer.core.layout import JOB, AnalysisPaths, JobPaths
from kerneltracer.errors import InputFileError
from kerneltracer.inputguard import SMALL_FILE, read_input
from kerneltracer.jsonio import atomic_write_bytes

SCHEMA_VERSION = 1


class AnalysisState(StrEnum):
    """How an analysis ended, as its record says."""

    DONE = "done"  # reports written, listed in ``files``
    FAILED = "failed"  # it raised (a MemoryError above the ceiling too)
    TIMEOUT = "timeout"  # no result in time: its process group was killed
    CRASHED = "crashed"  # its process died (signal, OOM killer)
    INTERRUPTED = "interrupted"  # ``analyze`` was stopped while it ran

    @property
    def failed(self) -> bool:
        """An end that makes ``analyze`` exit 1; interrupted has its own exit (130)."""
        return self in _FAILED


_FAILED = frozenset({AnalysisState.FAILED, AnalysisState.TIMEOUT, AnalysisState.CRASHED})
_STATES = tuple(s.value for s in AnalysisState)


class AnalysisRecord(BaseModel):
    """The content of ``_ANALYSIS.json``."""

    # Unknown fields are kept so a newer writer's additions survive an older reader.
    model_config = ConfigDict(extra="allow")

    schema_version: Literal[1] = 1
    state: AnalysisState
    # The stamp a rerun compares to skip an unchanged analysis; None in records from
    # before it (they never count as unchanged).
    analysis: str | None = None
    version: str | None = None
    status_sha256: str | None = None  # of the job's _TRACE_STATUS.json the analysis read
    files: list[str] = []  # the reports (done), relative to the analysis dir
    error: str | None = None  # why it did not end done: one line
    traceback: str | None = None  # failed: the exception's traceback
    log: str | None = None  # the log's name in the analysis dir, when one was kept

    def same_inputs(self, analysis: str, version: str, status_sha256: str) -> bool:
        """Done by this analysis version on this status: a rerun would write the same."""
        stamp = (self.analysis, self.version, self.status_sha256)
        return self.state is AnalysisState.DONE and stamp == (analysis, version, status_sha256)


@dataclass(frozen=True)
class AnalysisProblem:
    """Why an analysis dir has no usable record."""

    reason: str


def analysis_names(job_dir: Path) -> list[str]:
    """The analyses that have a folder in ``job_dir``, sorted (none: an empty list)."""
    try:
        entries = list(os.scandir(JobPaths(job_dir).analyses))
    except OSError:
        return []
    return sorted(e.name for e in entries if e.is_dir())


def write_analysis_record(paths: AnalysisPaths, record: AnalysisRecord) -> AnalysisRecord:
    """Write ``record`` atomically into ``paths.dir``; the record as written.

    The log is kept only when the analysis wrote something to it (an empty one is removed),
    and then the record names it.
    """
    paths.dir.mkdir(parents=True, exist_ok=True)  # a worker may die before making it
    try:
        if paths.log.stat().st_size == 0:
            paths.log.unlink()
    except FileNotFoundError:
        pass
    kept = paths.log.is_file()
    written = record.model_copy(update={"log": paths.log.name if kept else None})
    data = written.model_dump_json(indent=2, exclude_none=True).encode() + b"\n"
    atomic_write_bytes(paths.record, data)
    return written


def read_analysis_record(paths: AnalysisPaths) -> AnalysisRecord | AnalysisProblem:
    """The record in ``paths.dir``, or the problem that makes it unusable."""
    try:
        data = read_input(paths.record, SMALL_FILE, what="analysis record", gzip=False)
    except InputFileError as exc:
        if not os.path.lexists(paths.record):
            return AnalysisProblem("no analysis record (interrupted, or not written by analyze)")
        return AnalysisProblem(f"analysis record unreadable: {exc}")
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError:
        return AnalysisProblem("analysis record is not valid JSON (truncated or corrupt)")
    if not isinstance(raw, dict):
        return AnalysisProblem("analysis record is not a JSON object")
    if raw.get("schema_version", SCHEMA_VERSION) != SCHEMA_VERSION:
        return AnalysisProblem(f"analysis record of another schema ({raw['schema_version']!r})")
    state = raw.get("state")
    if state not in _STATES:
        valid = ", ".join(_STATES)
        return AnalysisProblem(f"analysis record has no known state ({state!r}; valid: {valid})")
    try:
        return AnalysisRecord.model_validate(_lenient(raw))
    except ValidationError as exc:  # e.g. a schema_version of another type (1.0)
        return AnalysisProblem(f"analysis record does not match its schema: {exc}")


_OPTIONAL_STR = ("analysis", "version", "status_sha256", "error", "traceback", "log")


def _lenient(raw: dict[str, Any]) -> dict[str, Any]:
    """``raw`` without the values a reader cannot use, so the rest of the record counts."""
    out = dict(raw)
    for name in _OPTIONAL_STR:
        if name in out and not isinstance(out[name], str):
            del out[name]
    files = out.get("files")
    out["files"] = [f for f in files if isinstance(f, str)] if isinstance(files, list) else []
    return out


def record_files(paths: AnalysisPaths, record: AnalysisRecord) -> tuple[str, ...]:
    """The record's files that exist in its folder, relative to it, sorted and unique.

    Records hold paths relative to the folder; older ones hold whatever path the analysis
    returned (absolute, or relative to the analyser's cwd), so the part after
    ``analysis/<name>/`` is taken when the path as written does not resolve. Paths that
    climb out of the folder are dropped.
    """
    found = {f for f in (_existing(paths, listed) for listed in record.files) if f is not None}
    return tuple(sorted(found))


def _existing(paths: AnalysisPaths, listed: str) -> str | None:
    parts = PurePosixPath(listed).parts
    rel: tuple[str, ...] = parts
    if listed.startswith("/") or not os.path.isfile(paths.dir.joinpath(*parts)):
        for i in range(len(parts) - 1):
            if parts[i] == JOB.analyses.name and parts[i + 1] == paths.name:
                rel = parts[i + 2 :]
    candidate = "/".join(rel)
    if not rel or candidate.startswith("/") or ".." in rel:
        return None
    return candidate if os.path.isfile(paths.dir.joinpath(*rel)) else None
