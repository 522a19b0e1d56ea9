"""Read a run dir into plain dataclasses the report renders: nothing here writes or renders.

Reading is defensive by design: a run may still be in progress (jobs without a status yet),
status files may be truncated or of another schema, analysis markers may be missing or list
paths written by an older runner. Each such case becomes a visible state (``pending``,
``unreadable``, an analysis ``failed``) instead of an exception.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from kerneltracer.core.analysis_record import (
    AnalysisRecord,
    AnalysisState,
    analysis_names,
    read_analysis_record,
    record_files,
)
from kerneltracer.core.artefacts import ArtefactKind, output_kind
from kerneltracer.core.identity import Variant, collapsed_alternatives, variant_of
from kerneltracer.core.layout import JOB, AnalysisPaths, JobPaths
from kerneltracer.core.manifest import RunManifest
from kerneltracer.core.rundir import PENDING, UNREADABLE, JobRecord, RunDir
from kerneltracer.core.runlock import orchestrator_gone
from kerneltracer.core.status import FAILURE_STATUSES, TraceStatus
from kerneltracer.core.tested import Untested, untested

# States beyond the orchestrator's JobStatus values that only the report knows.
# The worker's phases in order; "shutdown" is an engine's stop (vLLM).
PHASES = ("load", "warmup", "trace", "write", "shutdown")
# Outputs the model page lists under "graphs": graphs and generated code, not their index.
_GRAPH_KINDS = frozenset(
    {
        ArtefactKind.FX_GRAPH,
        ArtefactKind.ATEN_GRAPH,
        ArtefactKind.GRAPH_TEXT,
        ArtefactKind.COMPILE_CODE,
    }
)


@dataclass(frozen=True)
class FileRef:
    """A file of a job, by its path relative to the job dir."""

    path: str
    size: int | None = None
    kind: ArtefactKind | None = None  # recorded, else derived from the path


@dataclass(frozen=True)
class AnalysisResult:
    paths: AnalysisPaths  # where it lives; its name is the analysis's
    state: AnalysisState | Literal["unreadable"]  # unreadable: no usable record (error: why)
    error: str | None
    files: tuple[str, ...]  # relative to the analysis dir, existing files only

    @property
    def name(self) -> str:
        return self.paths.name

    @property
    def rel_dir(self) -> str:
        """Its folder relative to the job dir, for links."""
        return self.paths.relative.as_posix()

    @property
    def done(self) -> bool:
        return self.state is AnalysisState.DONE

    @property
    def main_file(self) -> str | None:
        """The page a reader opens first: an index/report HTML, else any HTML, else JSON/MD."""
        for preferred in ("index.html", "report.html"):
            if preferred in self.files:
                return preferred
        for ext in (".html", ".md", ".json", ".txt", ".csv"):
            hits = sorted((f for f in self.files if f.endswith(ext)), key=lambda f: (len(f), f))
            if hits:
                return hits[0]
        return None


@dataclass(frozen=True)
class InputRow:
    name: str
    kind: str
    shape: str  # "1×32", "" for non-tensors
    dtype: str
    note: str = ""  # cache type and length, a flag's or generate()'s value


def _input_rows(raw: list[dict[str, Any]]) -> tuple[InputRow, ...]:
    rows = []
    for item in raw:
        if not isinstance(item, dict):
            continue
        shape = item.get("shape") or []
        note = []
        if item.get("type"):
            note.append(str(item["type"]))
        if item.get("tokens") is not None:
            note.append(f"{item['tokens']} tokens")
        if item.get("layers") is not None:
            note.append(f"{item['layers']} layers")
        if "value" in item:
            note.append(f"= {item['value']}")
        rows.append(
            InputRow(
                name=str(item.get("name", "?")),
                kind=str(item.get("kind", "")),
                shape="×".join(str(d) for d in shape) if isinstance(shape, list) else "",
                dtype=str(item.get("dtype", "")),
                note=", ".join(note),
            )
        )
    return tuple(rows)


@dataclass(frozen=True)
class Job:
    key: str
    slug: str
    column: str  # tracer, plus ".<mode>" for non-eval jobs (the job key's second part)
    model: str  # display id: untrusted text
    tracer: str
    mode: str
    status: str
    phase: str = "prefill"
    inputs: tuple[InputRow, ...] = ()  # the example inputs the worker built
    duration_s: float | None = None
    peak_rss_bytes: int | None = None
    reason: str | None = None
    error_location: str | None = None
    error_phase: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    device: str | None = None
    phases: dict[str, float] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    outputs: tuple[FileRef, ...] = ()
    extras: tuple[str, ...] = ()  # JOB.json, worker.log, phases.log, status: when present
    analyses: tuple[AnalysisResult, ...] = ()
    has_dir: bool = False
    # "fake": traced from the config on fake tensors: shapes and ops, no measured time.
    weights: str = "real"
    notes: tuple[str, ...] = ()

    @property
    def failed(self) -> bool:
        return self.status in {s.value for s in FAILURE_STATUSES}

    @property
    def variant(self) -> Variant:
        return variant_of(self.mode, self.phase)

    @property
    def graphs(self) -> tuple[FileRef, ...]:
        return tuple(o for o in self.outputs if o.kind in _GRAPH_KINDS)

    @property
    def files(self) -> tuple[FileRef, ...]:
        return tuple(o for o in self.outputs if o.kind not in _GRAPH_KINDS)


@dataclass
class ModelRow:
    slug: str
    display: str
    jobs: dict[str, Job] = field(default_factory=dict)  # column -> job

    @property
    def worst(self) -> str:
        """The row's most alarming state, for filtering and sorting."""
        states = {j.status for j in self.jobs.values()}
        for state in (*sorted(s.value for s in FAILURE_STATUSES), UNREADABLE, PENDING):
            if state in states:
                return state
        return "ok" if "ok" in states else (min(states) if states else PENDING)


@dataclass(frozen=True)
class JobTimes:
    """What the jobs' own status files say about time. run.json holds the last
    invocation only: a rerun that bypassed every job records its own ~0 s there, while
    the results it reports took the time recorded here."""

    span_s: float | None = None  # the first job's start to the last job's end
    duration_s: float | None = None  # the jobs' durations summed
    earlier: int = 0  # jobs that ended before the last invocation started (bypassed)


@dataclass
class RunData:
    run_dir: Path
    started_at: str | None
    finished_at: str | None
    wall_s: float | None  # of the last invocation (run.json)
    interrupted: bool | None
    in_progress: bool
    # Not finished, and the orchestrator that wrote it (on this host) no longer runs.
    abandoned: bool
    kerneltracer_version: str | None
    config: str | None
    columns: list[str]
    models: list[ModelRow]
    jobs: list[Job]
    # Skipped exclusive-group alternatives (job key -> the winner's key): shown in the
    # winner's grid cell, not as columns of their own.
    folded: dict[str, str] = field(default_factory=dict)
    job_times: JobTimes = field(default_factory=JobTimes)

    @property
    def tracers(self) -> list[str]:
        """The grid's columns: every tracer with a job that is not folded into another."""
        return list(dict.fromkeys(j.tracer for j in self.jobs if j.key not in self.folded))

    @property
    def variants(self) -> int:
        """Model variants (model, mode, phase): the grid's rows."""
        return len({(j.slug, j.variant) for j in self.jobs})

    @property
    def name(self) -> str:
        return self.run_dir.resolve().name

    @property
    def counts(self) -> dict[str, int]:
        return dict(Counter(j.status for j in self.jobs).most_common())

    @property
    def versions(self) -> dict[str, list[str]]:
        """Every library version any job recorded: more than one means a mixed run."""
        seen: dict[str, set[str]] = {}
        for job in self.jobs:
            for lib, ver in job.versions.items():
                seen.setdefault(lib, set()).add(ver)
        return {lib: sorted(v) for lib, v in sorted(seen.items())}

    @property
    def untested(self) -> list[Untested]:
        """Framework versions jobs ran on that the test suite never ran (pyproject's ranges)."""
        return untested(self.versions)


def collect_run(run_dir: Path) -> RunData:
    """Everything the report shows about ``run_dir``; raises RunDirError if it is not a run."""
    run = RunDir.open(run_dir)
    manifests = run.manifests()
    jobs = [_read_job(record) for record in run.records(manifests=manifests)]
    first = manifests[0] if manifests else RunManifest()
    open_ = any(m.open for m in manifests)
    abandoned = open_ and all(orchestrator_gone(run_dir, m) for m in manifests if m.open)
    started_at = _min_str(m.started_at for m in manifests)
    return RunData(
        run_dir=run_dir,
        started_at=started_at,
        finished_at=None if open_ else _max_str(m.finished_at for m in manifests),
        wall_s=max((m.wall_s for m in manifests if m.wall_s is not None), default=None),
        interrupted=any(bool(m.interrupted) for m in manifests) if manifests else None,
        in_progress=(open_ and not abandoned) or not manifests,
        abandoned=abandoned,
        kerneltracer_version=first.kerneltracer_version,
        config=first.config,
        columns=_columns(jobs),
        models=_rows(jobs),
        jobs=jobs,
        folded=collapsed_alternatives({j.key: (j.status, j.reason) for j in jobs}),
        job_times=_job_times(jobs, started_at),
    )


def _job_times(jobs: list[Job], run_started: str | None) -> JobTimes:
    starts, ends, durations, earlier = [], [], [], 0
    began = _timestamp(run_started)
    for job in jobs:
        if job.duration_s is None or not math.isfinite(job.duration_s) or job.duration_s < 0:
            continue  # never ran (skipped alternatives have no duration), or nonsense
        start, end = _timestamp(job.started_at), _timestamp(job.finished_at)
        if start is None or end is None or end < start:
            continue
        starts.append(start)
        ends.append(end)
        durations.append(job.duration_s)
        earlier += began is not None and end < began
    if not durations:
        return JobTimes()
    return JobTimes(round(max(ends) - min(starts), 3), round(sum(durations), 3), earlier)


def _timestamp(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return datetime.fromisoformat(value).timestamp()
    except (TypeError, ValueError):
        return None


def _read_job(record: JobRecord) -> Job:
    parts, planned = record.parts, record.planned
    stub = Job(
        key=record.key,
        slug=parts.slug,
        column=parts.column,
        model=(planned and planned.model) or parts.slug,
        tracer=(planned and planned.tracer) or parts.tracer,
        mode=(planned and planned.mode) or parts.mode,
        phase=(planned and planned.phase) or parts.phase,
        status=PENDING,
        has_dir=record.job_dir.is_dir(),
        extras=_extras(record.job_dir),
    )
    st = record.status
    if record.state == PENDING:
        return stub
    if st is None:
        return replace(stub, status=UNREADABLE, reason=record.problem_text)
    return _job_from_status(st, record.job_dir, stub)


def _job_from_status(st: TraceStatus, job_dir: Path, stub: Job) -> Job:
    err = st.error
    return replace(
        stub,
        model=str(st.model.get("display") or stub.model),
        tracer=st.tracer,
        mode=st.mode,
        phase=st.phase,
        inputs=_input_rows(st.inputs),
        status=st.status.value,
        duration_s=st.duration_s,
        peak_rss_bytes=st.tree_peak_rss_bytes or st.peak_rss_bytes,
        reason=(err.root_cause if err is not None else None) or st.reason,
        error_location=err.location if err is not None else None,
        error_phase=err.phase if err is not None else None,
        started_at=st.started_at,
        finished_at=st.finished_at,
        device=st.resolved_device or st.device,
        phases={k: float(v) for k, v in st.phases.items()},
        versions={k: v for k, v in st.versions.items() if v},
        outputs=tuple(
            FileRef(o.path, o.size, output_kind(o.path, o.kind))
            for o in st.outputs
            if _safe_rel(o.path)
        ),
        analyses=_read_analyses(job_dir),
        weights=st.weights,
        notes=tuple(str(n) for n in (st.model_extra or {}).get("notes") or ()),
    )


def _extras(job_dir: Path) -> tuple[str, ...]:
    names = (p.name for p in JOB.bookkeeping)
    return tuple(n for n in names if os.path.isfile(job_dir / n))


def _read_analyses(job_dir: Path) -> tuple[AnalysisResult, ...]:
    return tuple(_read_analysis(job_dir, name) for name in analysis_names(job_dir))


def _read_analysis(job_dir: Path, name: str) -> AnalysisResult:
    paths = JobPaths(job_dir).analysis(name)
    record = read_analysis_record(paths)
    if not isinstance(record, AnalysisRecord):
        return AnalysisResult(paths, UNREADABLE, record.reason, ())
    return AnalysisResult(paths, record.state, record.error, record_files(paths, record))


def _safe_rel(path: str) -> bool:
    parts = PurePosixPath(path).parts
    return bool(parts) and not path.startswith("/") and ".." not in parts


def _columns(jobs: list[Job]) -> list[str]:
    return list(dict.fromkeys(j.column for j in jobs))


def _rows(jobs: list[Job]) -> list[ModelRow]:
    rows: dict[str, ModelRow] = {}
    for job in jobs:
        row = rows.setdefault(job.slug, ModelRow(job.slug, job.model))
        row.jobs[job.column] = job
        if job.status not in (PENDING, UNREADABLE):
            row.display = job.model  # a status file knows the display id best
    return list(rows.values())


def _min_str(values: Any) -> str | None:
    strs = [v for v in values if isinstance(v, str)]
    return min(strs) if strs else None


def _max_str(values: Any) -> str | None:
    strs = [v for v in values if isinstance(v, str)]
    return max(strs) if strs else None
