"""One job's (or one log's) compile health: the fleet table's row and its long tables."""

from __future__ import annotations

import dataclasses
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kerneltracer.analysis.compile_health.breaks import (
    BreakReason,
    explanation_and_hints,
    function_frame,
    parse_break,
    recompile_key,
    resume_line,
    user_function,
)
from kerneltracer.analysis.compile_health.frames import ModelFrames
from kerneltracer.analysis.compile_health.records import (
    CACHE_KINDS,
    KERNEL_KINDS,
    PHASES,
    CompileRecord,
)
from kerneltracer.analysis.compile_health.sources import LogHealth, SourceProblem

OK, PARTIAL, FAILED, NO_LOG, NOT_RUN = "ok", "partial", "failed", "no_log", "not_run"
# A log that cannot be trusted: cut short, or not readable as a TORCH_TRACE log. Its
# counts are what could be read; it is left out of the pass rate and the compile time.
TRUNCATED, UNUSABLE = "truncated", "unusable"
UNTRUSTED = frozenset({TRUNCATED, UNUSABLE})
TEXTS_DIR = "compile_ids"  # the compile ids' graph, guard and code texts, under the output
STATES = (OK, PARTIAL, FAILED, TRUNCATED, UNUSABLE, NO_LOG, NOT_RUN)
# Job statuses that say the job did not try (not applicable, bypassed, stopped from outside).
_NOT_TRIED = frozenset({"unsupported", "skipped", "interrupted"})
_EXC_NAME = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Failed|Unsupported)\w*):")


@dataclass
class BreakRow:
    model: str
    key: str
    gb_id: str | None
    gb_type: str
    frame: str | None
    code: str | None
    occurrences: int
    compile_ids: list[str]
    explanation: str | None = None
    hints: list[str] = field(default_factory=list)
    url: str | None = None
    skipped_function: bool = False  # Dynamo gave up on the function: it ran eagerly


@dataclass
class RecompileRow:
    model: str
    compile_id: str
    function: str | None
    frame: str | None
    reason: str
    reason_key: str
    # A Dynamo resume function: the line of the graph break it continues after, and the
    # registry keys of the breaks at that line (what made this a function of its own).
    resumes_after_line: int | None = None
    after_breaks: list[str] = field(default_factory=list)


@dataclass
class CompileIdRow:
    """One compile id (one attempt) of a job: tlparse's compile directory, as a row."""

    compile_id: str
    rank: int | None
    function: str | None
    frame: str | None
    status: str  # ok, failed (the frame ran eagerly), restarted, no_graph, unfinished
    fail_type: str | None
    fail_reason: str | None
    fail_frame: str | None
    explanation: str | None
    hints: list[str]
    restart_reasons: list[str]
    recompile_reasons: list[str]
    breaks: list[str]  # "GB0059 Failed to trace builtin operator at file:line"
    total_s: float | None
    phase_s: dict[str, float]
    dynamo_before_restart_s: float | None
    graphs: int
    graph_ops: int
    guards: int
    shape_env_guards: int
    cache: dict[str, int]
    kernels: dict[str, int]
    # kind (graph, guards, output_code) -> its text file, relative to compile health's
    # output dir (JobHealth.texts holds the texts until they are written).
    files: dict[str, str] = field(default_factory=dict)


@dataclass
class JobHealth:
    """Everything the fleet table says about one model × compile job."""

    model: str
    job: str  # the job key ("tiny-llama/torch_compile"), or the log's path
    mode: str = ""
    job_status: str | None = None  # the job's status file, None for a bare log
    compile_status: str = OK
    fail_type: str | None = None
    fail_reason: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    weights: str = "real"
    counts: dict[str, int] = field(default_factory=dict)
    times: dict[str, float] = field(default_factory=dict)
    breaks: list[BreakRow] = field(default_factory=list)
    recompiles: list[RecompileRow] = field(default_factory=list)
    compiles: list[CompileIdRow] = field(default_factory=list)
    texts: dict[str, str] = field(default_factory=dict)  # CompileIdRow.files path -> text
    problems: list[str] = field(default_factory=list)

    def row(self) -> dict[str, Any]:
        """The flat fleet-table row (CSV / Parquet columns)."""
        return {
            "model": self.model,
            "job": self.job,
            "mode": self.mode,
            "job_status": self.job_status,
            "compile_status": self.compile_status,
            "fail_type": self.fail_type,
            "fail_reason": self.fail_reason,
            "weights": self.weights,
            **{k: self.counts.get(k, 0) for k in COUNT_COLUMNS},
            "compile_time_s": self._time("total"),
            **{f"{p}_s": self._time(p) for p in PHASES},
            "dynamo_before_restart_s": self._time("dynamo_before_restart"),
            "break_keys": ";".join(sorted({b.key for b in self.breaks})),
            "options": ",".join(f"{k}={v}" for k, v in sorted(self.options.items())),
        }

    def _time(self, phase: str) -> float | None:
        # A cut log's compile times are partial sums: unknown, never 0.0 or a low figure.
        if self.compile_status in UNTRUSTED:
            return None
        return round(self.times.get(phase, 0.0), 6)


COUNT_COLUMNS = (
    "logs",
    "compile_ids",
    "frames",
    "graphs",
    "graph_breaks",
    "distinct_breaks",
    "recompiles",
    "restarts",
    "failed_frames",
    "guards",
    "shape_env_guards",
    "dynamic_symbols",
    "specializations",
    *(f"cache_{k}" for k in CACHE_KINDS),
    *(f"kernels_{k}" for k in KERNEL_KINDS),
    "piecewise_compiles",
)


def job_health(
    model: str,
    job: str,
    logs: list[LogHealth],
    problems: list[SourceProblem],
    *,
    job_status: str | None = None,
    job_reason: str | None = None,
    model_dir: Path | None = None,
    **extra: Any,
) -> JobHealth:
    """``model_dir``: the directory the job loaded its model from; frames in the
    transformers modules cache (a remote-code model's copy) are shown there."""
    if model_dir is not None:
        _to_model_dir(logs, ModelFrames(model_dir))
    records = [r for log in logs for r in log.records]
    health = JobHealth(model, job, job_status=job_status, **extra)
    health.problems = [f"{p.source}: {p.reason}" for p in problems]
    health.counts = _counts(logs, records)
    health.times = _times(records)
    health.breaks = _breaks(model, records)
    health.counts["distinct_breaks"] = len(health.breaks)
    health.recompiles = _recompiles(model, records, health.breaks)
    health.compiles = _compile_rows(job, logs, health.texts)
    _status(health, records, job_reason)
    if health.compile_status not in (NOT_RUN, FAILED):
        _trust(health, logs, problems)
    return health


def _to_model_dir(logs: list[LogHealth], frames: ModelFrames) -> None:
    for log in logs:
        for r in log.records:
            r.co_filename = frames.file(r.co_filename)
            r.fail_frame = frames.frame(r.fail_frame)
            r.breaks = [dataclasses.replace(b, frame=frames.frame(b.frame)) for b in r.breaks]


def _trust(health: JobHealth, logs: list[LogHealth], problems: list[SourceProblem]) -> None:
    """Mark a job whose logs cannot be trusted: one unusable (not readable as a log), or
    one cut short. A job that did not end ok says more by its own end, and keeps it."""
    unusable = [p.reason for p in problems if p.unusable]
    cut = [
        f"{Path(log.source).name}: {'; '.join(why)}" for log in logs if (why := log.truncation())
    ]
    if unusable:
        health.compile_status, reasons = UNUSABLE, unusable
    elif cut:
        health.compile_status, reasons = TRUNCATED, cut
    else:
        return
    health.fail_type = None
    health.fail_reason = "; ".join(dict.fromkeys(reasons))


def _counts(logs: list[LogHealth], records: list[CompileRecord]) -> dict[str, int]:
    frames = {(log.source, log.rank, r.frame_id) for log in logs for r in log.records}
    recompiled = {
        (log.source, log.rank, r.frame_id, r.frame_compile_id)
        for log in logs
        for r in log.records
        if r.is_recompile
    }
    counts = {
        "logs": len(logs),
        "compile_ids": sum(1 for r in records if r.frame_id is not None),
        "frames": len({f for f in frames if f[2] is not None}),
        "graphs": sum(r.graphs for r in records),
        "graph_breaks": sum(len(breaks_of(r)) for r in records),
        "recompiles": len(recompiled),
        "restarts": sum(1 for r in records if r.attempt),
        "failed_frames": sum(1 for r in records if r.failed),
        "guards": sum(r.guard_count for r in records),
        "shape_env_guards": sum(r.shape_env_guard_count for r in records),
        "dynamic_symbols": sum(r.dynamic_symbols for r in records),
        "specializations": sum(r.specializations for r in records),
        "piecewise_compiles": sum(r.piecewise_compiles for r in records),
    }
    for k in CACHE_KINDS:
        counts[f"cache_{k}"] = sum(r.cache[k] for r in records)
    for k in KERNEL_KINDS:
        counts[f"kernels_{k}"] = sum(r.kernels[k] for r in records)
    return counts


def _times(records: list[CompileRecord]) -> dict[str, float]:
    times = dict.fromkeys(PHASES, 0.0)
    for r in records:
        for p, v in r.phase_times().items():
            times[p] += v
    times["total"] = sum(r.total_s for r in records)
    times["dynamo_before_restart"] = sum(r.dynamo_before_restart_s or 0.0 for r in records)
    return times


def breaks_of(r: CompileRecord) -> list[BreakReason]:
    """The breaks of one compile id: its graph-break artifacts, or, in a log of an older
    torch that wrote none (``r.restarts_are_breaks``), its restart reasons. A newer torch
    logs a break both ways (artifact in one attempt, restart reason in the next): once."""
    if r.breaks or not r.restarts_are_breaks:
        return list(r.breaks)
    out = []
    for reason in r.restart_reasons:
        b = parse_break(reason)
        if b.frame is None:  # a restart reason names no line: the function's first line
            frame = function_frame(r.co_filename, r.co_firstlineno, r.co_name)
            b = dataclasses.replace(b, frame=frame)
        out.append(b)
    return out


def _breaks(model: str, records: list[CompileRecord]) -> list[BreakRow]:
    """Distinct breaks by (registry key, user frame), with how often and where they hit."""
    rows: dict[tuple[str, str | None], BreakRow] = {}
    for r in records:
        for b in breaks_of(r):
            row = rows.get((b.key, b.frame))
            if row is None:
                row = rows[(b.key, b.frame)] = BreakRow(
                    model,
                    b.key,
                    b.gb_id,
                    b.gb_type,
                    b.frame,
                    b.code,
                    0,
                    [],
                    b.explanation,
                    list(b.hints),
                    b.url,
                    b.skipped_function,
                )
            row.occurrences += 1
            if r.compile_id not in row.compile_ids:
                row.compile_ids.append(r.compile_id)
    return list(rows.values())


def _recompiles(
    model: str, records: list[CompileRecord], breaks: list[BreakRow]
) -> list[RecompileRow]:
    """One row per (recompile, reason). The attempts of one recompile (``[0/1]``,
    ``[0/1_1]``) are one recompile: the attempt with metrics names the function. A
    resume function is named by the function it continues and the break's line, and is
    linked to the breaks at that line."""
    named = {_ident(r): r for r in records if r.has_metrics}
    breaks_at: dict[str, list[str]] = {}
    for b in breaks:
        if b.frame is not None:
            breaks_at.setdefault(b.frame, []).append(b.key)
    out: list[RecompileRow] = []
    seen: set[tuple[str, str]] = set()
    for r in records:
        if not r.is_recompile:
            continue
        ident = _ident(r)
        where = named.get(ident, r)
        resumed = resume_line(where.co_name)
        line = resumed if resumed is not None else where.co_firstlineno or 0
        frame = None if where.co_filename is None else f"{where.co_filename}:{line}"
        for reason in r.recompile_reasons or ["(reason not logged)"]:
            key = recompile_key(reason)
            if (ident, key) not in seen:
                seen.add((ident, key))
                row = RecompileRow(
                    model,
                    f"[{ident}]",
                    _function_label(where.co_name),
                    frame,
                    reason,
                    key,
                    resumed,
                    sorted(set(breaks_at.get(frame or "", []))) if resumed is not None else [],
                )
                out.append(row)
    return out


def _function_label(co_name: str | None) -> str | None:
    """``forward``, or ``forward (resumed at line 12)`` for the resume function Dynamo made
    of ``forward``'s rest after a graph break at line 12."""
    name = user_function(co_name)
    line = resume_line(co_name)
    return name if line is None or name is None else f"{name} (resumed at line {line})"


def _compile_rows(job: str, logs: list[LogHealth], texts: dict[str, str]) -> list[CompileIdRow]:
    """Every compile id of the job's logs, in log order (ranks in turn); their graph, guard
    and code texts go into ``texts`` under the file each row names."""
    out = []
    for log in logs:
        # Dynamo writes a compile's metrics (its function, times, restart reasons) once,
        # under its last attempt: an earlier attempt is named by it.
        named = {_ident(r): r for r in log.records if r.has_metrics}
        for r in log.records:
            if r.frame_id is None:
                continue
            row = _compile_row(r, named.get(_ident(r)), log.rank)
            for kind, text in r.texts.items():
                row.files[kind] = _text_file(job, row, kind)
                texts[row.files[kind]] = text
            out.append(row)
    return out


def _compile_row(r: CompileRecord, named: CompileRecord | None, rank: int | None) -> CompileIdRow:
    where = named or r
    resumed = resume_line(where.co_name)
    line = resumed if resumed is not None else where.co_firstlineno
    explanation, hints = explanation_and_hints(r.fail_reason)
    if r.failed:
        status = "failed"
    elif not r.has_metrics:
        status = "restarted" if named is not None else "unfinished"
    elif not r.graphs:
        status = "no_graph"
    else:
        status = OK
    return CompileIdRow(
        compile_id=r.compile_id,
        rank=rank,
        function=_function_label(where.co_name),
        frame=function_frame(where.co_filename, line, None),
        status=status,
        fail_type=r.fail_type,
        fail_reason=r.fail_reason,
        fail_frame=r.fail_frame,
        explanation=explanation,
        hints=list(hints),
        restart_reasons=list(r.restart_reasons),
        recompile_reasons=list(r.recompile_reasons),
        breaks=[f"{b.gb_id or '-'} {b.gb_type} at {b.frame or '?'}" for b in breaks_of(r)],
        total_s=round(r.total_s, 6) if r.has_metrics else None,
        phase_s={p: round(v, 6) for p, v in r.phase_times().items()},
        dynamo_before_restart_s=r.dynamo_before_restart_s,
        graphs=r.graphs,
        graph_ops=r.graph_op_count,
        guards=r.guard_count,
        shape_env_guards=r.shape_env_guard_count,
        cache=dict(r.cache),
        kernels=dict(r.kernels),
    )


def _text_file(job: str, row: CompileIdRow, kind: str) -> str:
    """Where a compile id's text lives under compile health's output dir: plain names
    (the job key and compile id made safe), with a short hash so that two never meet."""
    ident = f"{row.compile_id}" + (f"_rank{row.rank}" if row.rank is not None else "")
    digest = hashlib.sha256(f"{job}\0{ident}".encode()).hexdigest()[:8]
    return f"{TEXTS_DIR}/{_safe(job)}/{_safe(ident)}-{digest}/{kind}.txt"


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._")[:80] or "_"


def _ident(r: CompileRecord) -> str:
    """The compile id without its attempt: ``0/1`` of ``[0/1_2]``."""
    return r.compile_id.strip("[]").split("_")[0]


def _status(health: JobHealth, records: list[CompileRecord], job_reason: str | None) -> None:
    failed = [r for r in records if r.failed]
    first = failed[0] if failed else None
    if health.job_status in _NOT_TRIED:
        health.compile_status = NOT_RUN
        health.fail_reason = None if not job_reason else job_reason.strip()
        return
    if health.job_status is not None and health.job_status != "ok":
        health.compile_status = FAILED
        reason = (first.fail_reason if first else None) or job_reason
    elif not records:
        health.compile_status = NO_LOG
        return
    elif first is not None:
        # A job that ran anyway: the frames that failed fell back to eager.
        health.compile_status = PARTIAL if health.job_status == "ok" else FAILED
        reason = first.fail_reason
    else:
        return
    health.fail_type = first.fail_type if first else _exception_name(reason) or health.job_status
    health.fail_reason = None if not reason else reason.strip()


def _exception_name(reason: str | None) -> str | None:
    """``UsageError`` of a root cause ``UsageError: unknown backend …``."""
    m = _EXC_NAME.match(reason or "")
    return m.group(1) if m else None
