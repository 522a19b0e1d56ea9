"""The Python API: runs, traces and logs as pandas DataFrames, for notebooks and scripts.

One engine, two faces: every function here calls the library functions the CLI commands call
(``kerneltracer.orchestrator`` for ``run``, ``coverage`` / ``corpus`` / ``compile_health`` /
``report`` / ``diff`` for the fleet views, ``analysis.timeline`` and ``analysis.structured_logs``
for files), so a table here has the rows and columns of the file the CLI writes. Nothing here
prints: progress reaches the caller through callbacks. Failures are the CLI's one-line errors,
raised as :class:`kerneltracer.errors.KernelTracerError` subclasses.

DataFrames are pandas (what HTA, TraceLens and ``torch.profiler`` users hold); pandas 3 keeps
strings Arrow-backed, and the Parquet tables load zero-copy, so ``polars.from_pandas`` or
``pyarrow.Table.from_pandas`` are one call away. pandas is imported on first use only.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from kerneltracer._public import API_NAMES
from kerneltracer.errors import InputFileError, UsageError

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from kerneltracer.analysis.compile_health.fleet import FleetHealth
    from kerneltracer.analysis.runner import AnalysisOutcome
    from kerneltracer.analysis.structured_logs.stats import ParseStats
    from kerneltracer.analysis.timeline.analyses.multirank import MultiRankFigures
    from kerneltracer.analysis.timeline.pipeline import TraceAnalysis
    from kerneltracer.core.jobspec import JobSpec
    from kerneltracer.core.status import TraceStatus
    from kerneltracer.coverage.diff_schema import DiffReport
    from kerneltracer.report import ReportResult

# What ``import kerneltracer`` offers lazily (the root reads the same list) and two constants.
__all__ = ["JOB_COLUMNS", "OUTPUT_COLUMNS", *API_NAMES]

PathLike = str | os.PathLike[str]

# Run.jobs: one row per job the run planned or started (what `kerneltracer status` lists).
JOB_COLUMNS = (
    "key",  # the job dir under jobs/: <model slug>/<tracer>[.<mode>][.<phase>]
    "model",  # the model's display id (hub id or local path)
    "variant",  # model label with a non-default mode / phase: "tiny-llama [decode]"
    "tracer",
    "mode",  # eval | train
    "phase",  # prefill | decode | generate
    "weights",  # real | fake
    "status",  # ok, failed, oom, timeout, crashed, unsupported, skipped, interrupted,
    # or pending (no status yet) / unreadable (a status file that cannot be used)
    "reason",  # one line: the root cause of a failure, or why it was skipped / unsupported
    "started_at",  # ISO 8601
    "finished_at",
    "duration_s",
    "peak_rss_bytes",  # of the worker's whole process tree
    "job_dir",  # absolute
)
# Run.outputs(): one row per output file a job's status lists.
OUTPUT_COLUMNS = ("key", "model", "tracer", "status", "kind", "path", "size_bytes")


def _pd() -> Any:
    import pandas as pd

    return pd


def _frame(rows: Iterable[Mapping[str, Any]], columns: Sequence[str]) -> pd.DataFrame:
    """A DataFrame of exactly ``columns`` (in order), also when there is no row."""
    pd = _pd()
    frame = pd.DataFrame.from_records(list(rows), columns=list(columns))
    return frame.convert_dtypes(dtype_backend="pyarrow") if len(frame) else frame


def _table_frame(table: pa.Table) -> pd.DataFrame:
    return table.to_pandas(types_mapper=_pd().ArrowDtype)


def _csv_rows_frame(rows: list[list[Any]]) -> pd.DataFrame:
    """The header + rows a CSV writer takes; an empty cell (``""``) is a missing value."""
    head, body = rows[0], rows[1:]
    return _frame(
        (dict(zip(head, (None if v == "" else v for v in row), strict=True)) for row in body),
        head,
    )


class Run:
    """A run dir: its jobs, their outputs and the fleet views, as DataFrames.

    Open one with :func:`open_run`; :func:`trace` returns one too. Every view reads the
    files on disk when asked (a run in progress shows what is there now).
    """

    def __init__(self, path: PathLike) -> None:
        from kerneltracer.core.rundir import RunDir

        self._dir = RunDir.open(Path(path))  # RunDirError: not there, or not a run dir
        self.path = self._dir.path.resolve()

    def __repr__(self) -> str:
        return f"Run({str(self.path)!r})"

    @property
    def jobs(self) -> pd.DataFrame:
        """One row per job (columns :data:`JOB_COLUMNS`), in plan order."""
        from kerneltracer.core.rundir import UNREADABLE
        from kerneltracer.coverage.scan import model_label

        rows = []
        for record in self._dir.records():
            raw = record.values  # validated: a "3.5" duration as 3.5
            rows.append(
                {
                    "key": record.key,
                    "model": record.model,
                    "variant": model_label(raw) if raw is not None else record.model,
                    "tracer": record.tracer,
                    "mode": record.mode,
                    "phase": record.phase,
                    "weights": str((raw or {}).get("weights") or "real"),
                    "status": record.state,
                    "reason": record.problem_text if record.state == UNREADABLE else record.reason,
                    "started_at": (raw or {}).get("started_at"),
                    "finished_at": (raw or {}).get("finished_at"),
                    "duration_s": (raw or {}).get("duration_s"),
                    "peak_rss_bytes": (raw or {}).get("tree_peak_rss_bytes")
                    or (raw or {}).get("peak_rss_bytes"),
                    "job_dir": str(record.job_dir.resolve()),
                }
            )
        return _frame(rows, JOB_COLUMNS)

    def outputs(self, kind: str | None = None) -> pd.DataFrame:
        """The output files of every job with a status (columns :data:`OUTPUT_COLUMNS`),
        only those of ``kind`` when given (an artefact kind: ``chrome_trace``,
        ``dispatch_signatures``, ``torch_trace_log``…; ``kind`` is None where unknown)."""
        from kerneltracer.core.artefacts import ArtefactKind
        from kerneltracer.coverage.scan import JobRef, iter_job_refs
        from kerneltracer.errors import choices

        if kind is not None and kind not in {k.value for k in ArtefactKind}:
            raise UsageError(
                f"unknown output kind {kind!r} (valid: {choices(k.value for k in ArtefactKind)})"
            )
        rows = []
        for ref in iter_job_refs(self.path):
            if not isinstance(ref, JobRef):
                continue
            for rel, k in zip(ref.outputs, ref.output_kinds(), strict=True):
                if Path(rel).is_absolute() or ".." in Path(rel).parts:
                    continue  # a tampered status file: never a path outside the job dir
                if kind is not None and k != kind:
                    continue
                path = ref.job_dir.resolve() / rel
                size = path.stat().st_size if path.is_file() else None
                rows.append(
                    {
                        "key": ref.key,
                        "model": ref.model,
                        "tracer": ref.tracer,
                        "status": ref.status,
                        "kind": None if k is None else k.value,
                        "path": str(path),
                        "size_bytes": size,
                    }
                )
        return _frame(rows, OUTPUT_COLUMNS)

    def coverage(self, device: str | None = None) -> pd.DataFrame:
        """Which ops each model runs: the rows and columns of ``coverage.parquet``
        (``kerneltracer coverage``): op, model, model_id, mode, phase, source, calls,
        signatures, self_time_us, est_flops, est_bytes, est_time_lb_us (the est_* columns
        estimated from shapes on ``device``, a device-table name)."""
        from kerneltracer.coverage import build_coverage
        from kerneltracer.coverage.export import to_table

        return _table_frame(to_table(build_coverage(self.path, _device(device))))

    def corpus(self) -> pd.DataFrame:
        """Every unique (op, inputs, kwargs) call of the run: the rows and columns of
        ``corpus.parquet`` (``kerneltracer corpus``)."""
        from kerneltracer.corpus.build import build_corpus
        from kerneltracer.corpus.export import corpus_table

        return _table_frame(corpus_table(build_corpus(self.path)))

    def costs(
        self, by: Literal["op", "module", "model"] = "op", device: str | None = None
    ) -> pd.DataFrame:
        """Estimated costs (FLOPs, bytes, roofline time lower bound on ``device``) per
        (model, op), (model, module) or model: ``costs_by_<by>.csv`` of the corpus."""
        from kerneltracer.corpus.build import build_corpus
        from kerneltracer.corpus.costs import corpus_breakdown, cost_tables, signature_costs

        if by not in ("op", "module", "model"):
            raise UsageError(f"costs: unknown by={by!r} (valid: model, module, op)")
        sigs = build_corpus(self.path).signatures
        dev = _device(device)
        if dev is None:
            from kerneltracer.costmodel import DEFAULT_DEVICE, load_devices

            dev = load_devices().get(DEFAULT_DEVICE)
        tables = cost_tables(corpus_breakdown(sigs, signature_costs(sigs), dev))
        return _csv_rows_frame(tables[by])

    def compile_health(self) -> CompileHealth:
        """Compile health of every job with a TORCH_TRACE log (``kerneltracer compile-health``)."""
        from kerneltracer.analysis.compile_health.fleet import run_health

        return CompileHealth(run_health(self.path))

    def attribution(self) -> pd.DataFrame:
        """Op → kernel attribution of every analysed chrome trace: the rows of each job's
        ``ops.parquet`` (the timeline analysis; run :meth:`analyze` first), with the job's
        ``key``, ``model`` and the ``trace`` it came from in front."""
        import pyarrow.parquet as pq

        from kerneltracer.analysis.timeline.job import TimelineAnalysis
        from kerneltracer.core.layout import JobPaths
        from kerneltracer.core.ops_csv import OPS_COLUMNS, OPS_PARQUET

        pd = _pd()
        head = ("key", "model", "trace")
        frames = []
        for record in self._dir.records():
            found = JobPaths(record.job_dir).analysis(TimelineAnalysis.name).dir
            for path in sorted(found.glob(f"*/{OPS_PARQUET}")):
                try:
                    frame = _table_frame(pq.read_table(path))
                except Exception as exc:  # pyarrow raises several types for a bad file
                    raise InputFileError(f"{path}: not a readable Parquet file ({exc})") from None
                frame.insert(0, "trace", path.parent.name)
                frame.insert(0, "model", record.model)
                frame.insert(0, "key", record.key)
                frames.append(frame)
        if not frames:
            return _frame([], (*head, *OPS_COLUMNS))
        return pd.concat(frames, ignore_index=True)

    def analyze(self, *, force: bool = False, workers: int = 1) -> pd.DataFrame:
        """Run every applicable analysis on every finished job (``kerneltracer analyze``),
        each in a worker process bounded like the CLI's; one row per analysis:
        job_key, analysis, state, detail, log."""
        from kerneltracer.analysis.isolation import Limits
        from kerneltracer.analysis.registry import ANALYSES
        from kerneltracer.analysis.runner import analyze_run
        from kerneltracer.core.analysis_limits import DEFAULT_TIMEOUT_S, default_max_memory

        limits = Limits(timeout_s=DEFAULT_TIMEOUT_S, max_memory_bytes=default_max_memory())
        outcomes: list[AnalysisOutcome] = analyze_run(
            self.path, dict(ANALYSES), force=force, workers=max(1, workers), limits=limits
        )
        rows = [
            {
                "job_key": o.job_key,
                "analysis": o.analysis,
                "state": str(o.state),
                "detail": o.detail,
                "log": None if o.log is None else str(o.log),
            }
            for o in outcomes
        ]
        return _frame(rows, ("job_key", "analysis", "state", "detail", "log"))

    def report(self, out_dir: PathLike | None = None) -> ReportResult:
        """Build the run report (``kerneltracer report``) into ``out_dir`` (default:
        RUN_DIR/report); ``.index`` is the page to open."""
        from kerneltracer.errors import RunDirError
        from kerneltracer.report import build_report

        out = None if out_dir is None else Path(out_dir)
        if out is not None and out.exists() and not out.is_dir():
            raise RunDirError(f"--out {out} exists and is not a directory")
        return build_report(self.path, out)

    def diff(
        self,
        other: Run | PathLike,
        *,
        min_time_change: float = 0.10,
        min_time_us: float = 10.0,
    ) -> Diff:
        """What changed from this run to ``other`` (``kerneltracer diff THIS OTHER``):
        status changes, ops added / removed, call-count and self-time changes."""
        from kerneltracer.coverage.diff import diff_runs

        after = other if isinstance(other, Run) else Run(other)
        return Diff(
            diff_runs(
                self.path, after.path, min_time_change=min_time_change, min_time_us=min_time_us
            )
        )


def _device(name: str | None) -> Any:
    if name is None:
        return None
    from kerneltracer.costmodel import load_devices

    return load_devices().get(name)  # UsageError naming the valid devices


@dataclass(frozen=True)
class Diff:
    """Two runs compared; ``report`` is the ``diff.json`` document (typed)."""

    report: DiffReport

    @property
    def summary(self) -> dict[str, int]:
        return self.report.summary.model_dump()

    @property
    def changes(self) -> pd.DataFrame:
        """One row per change: model, change (status | op_added | op_removed | calls |
        self_time), tracer (the source), op, before, after."""
        rows: list[dict[str, Any]] = []
        for m in self.report.models:
            for s in m.status_changes:
                rows.append(_change(m.model, "status", s.tracer, None, s.before, s.after))
            for o in m.ops_added:
                rows.append(_change(m.model, "op_added", o.source, o.op, None, None))
            for o in m.ops_removed:
                rows.append(_change(m.model, "op_removed", o.source, o.op, None, None))
            for c in m.count_changes:
                before, after = c.calls_before, c.calls_after
                rows.append(_change(m.model, "calls", c.source, c.op, before, after))
            for t in m.time_changes:
                rows.append(
                    _change(
                        m.model,
                        "self_time",
                        t.source,
                        t.op,
                        t.self_time_us_before,
                        t.self_time_us_after,
                    )
                )
        pd = _pd()
        frame = pd.DataFrame.from_records(rows, columns=list(_CHANGE_COLUMNS))
        # before / after hold statuses, counts or times: one object column each.
        return frame.astype({"before": object, "after": object})

    @property
    def has_changes(self) -> bool:
        return self.report.has_changes


_CHANGE_COLUMNS = ("model", "change", "tracer", "op", "before", "after")


def _change(
    model: str, change: str, tracer: str, op: str | None, before: Any, after: Any
) -> dict[str, Any]:
    return dict(zip(_CHANGE_COLUMNS, (model, change, tracer, op, before, after), strict=True))


@dataclass(frozen=True)
class CompileHealth:
    """Compile health of a run or of logs: the tables ``kerneltracer compile-health`` writes."""

    fleet: FleetHealth

    @property
    def jobs(self) -> pd.DataFrame:
        """One row per compile job: the columns of ``compile_health.parquet``."""
        from kerneltracer.analysis.compile_health.export import TABLE_COLUMNS

        return _frame((j.row() for j in self.fleet.jobs), TABLE_COLUMNS)

    @property
    def breaks(self) -> pd.DataFrame:
        """One row per (job, graph break): the columns of ``compile_breaks.csv``."""
        from kerneltracer.analysis.compile_health.export import BREAK_COLUMNS, break_rows

        return _frame(break_rows(self.fleet.jobs), BREAK_COLUMNS)

    @property
    def recompiles(self) -> pd.DataFrame:
        """One row per recompile: the columns of ``compile_recompiles.csv``."""
        from kerneltracer.analysis.compile_health.export import (
            RECOMPILE_COLUMNS,
            recompile_rows,
        )

        return _frame(recompile_rows(self.fleet.jobs), RECOMPILE_COLUMNS)

    @property
    def compile_ids(self) -> pd.DataFrame:
        """One row per compile id of every job: the columns of ``compile_ids.csv``."""
        from kerneltracer.analysis.compile_health.export import (
            COMPILE_ID_COLUMNS,
            compile_id_rows,
        )

        return _frame(compile_id_rows(self.fleet.jobs), COMPILE_ID_COLUMNS)

    @property
    def summary(self) -> dict[str, Any]:
        """Pass, partial and fail counts and rates, status counts, top breaks and
        recompile reasons, compile time."""
        return self.fleet.summary()

    @property
    def problems(self) -> list[str]:
        return list(self.fleet.problems)

    def write(self, out_dir: PathLike) -> list[Path]:
        """Write the CSV / Parquet / JSON / HTML files into ``out_dir``; returns them."""
        from kerneltracer.analysis.compile_health.export import write_fleet

        return write_fleet(self.fleet, Path(out_dir))


def open_run(path: PathLike) -> Run:
    """Open a run dir (what ``kerneltracer run`` wrote, finished or not).

    Raises :class:`kerneltracer.errors.RunDirError` when ``path`` does not exist or is not a
    run dir: the message ``kerneltracer status`` prints.
    """
    return Run(path)


@dataclass(frozen=True)
class ProgressEvent:
    """One step of :func:`trace`, for a callback to render (a progress bar, a log line).

    ``kind``: ``planned`` (``total`` jobs, ``to_run`` of them to run), ``started`` and
    ``finished`` (a job: ``key``, ``model``, ``tracer``; ``status`` and ``reason`` once
    finished) or ``notice`` (``text``, one line about the run itself).
    """

    kind: Literal["planned", "started", "finished", "notice"]
    total: int | None = None
    to_run: int | None = None
    key: str | None = None
    model: str | None = None
    tracer: str | None = None
    status: str | None = None
    reason: str | None = None
    text: str | None = None


@dataclass
class _CallbackObserver:
    """The orchestrator's observer (``orchestrator.events.RunObserver``) as events."""

    emit: Callable[[ProgressEvent], None]

    def planned(self, total: int, to_run: int) -> None:
        self.emit(ProgressEvent("planned", total=total, to_run=to_run))

    def job_started(self, job: JobSpec) -> None:
        self.emit(ProgressEvent("started", **_job_fields(job)))

    def job_finished(self, job: JobSpec, status: TraceStatus) -> None:
        reason = status.reason
        if reason is None and status.error is not None:
            reason = status.error.root_cause
        self.emit(
            ProgressEvent("finished", status=status.status.value, reason=reason, **_job_fields(job))
        )

    def notice(self, text: str) -> None:
        self.emit(ProgressEvent("notice", text=text))


def _job_fields(job: JobSpec) -> dict[str, Any]:
    return {"key": job.key, "model": job.model.display, "tracer": job.tracer}


ModelSpec = str | Mapping[str, Any]


def trace(
    config: PathLike | Mapping[str, Any] | Sequence[ModelSpec],
    *,
    output_dir: PathLike | None = None,
    jobs: int = 1,
    tracers: Sequence[str] = (),
    models: Sequence[str] = (),
    force: bool = False,
    preload: bool = True,
    on_progress: Callable[[ProgressEvent], None] | None = None,
) -> Run:
    """Trace a batch, one isolated worker per (model, tracer), as ``kerneltracer run`` does.

    ``config`` is a run config file (YAML), a config as a mapping (the YAML's fields), or a
    list of models (hub ids, local model dirs, or model entries as mappings). Relative paths
    in a mapping or list are relative to the current directory. ``tracers`` / ``models``
    select like ``--only`` / ``--models``; complete jobs are bypassed unless ``force``.
    ``on_progress`` receives a :class:`ProgressEvent` per step. Returns the :class:`Run`
    (failed jobs are rows of ``run.jobs``, not exceptions); a bad config raises
    :class:`kerneltracer.errors.ConfigError` with the CLI's message.
    """
    if isinstance(config, str | os.PathLike):
        return _trace_file(
            Path(config), output_dir, jobs, tracers, models, force, preload, on_progress
        )
    data = _config_data(config)
    if output_dir is None and "output_dir" not in data:
        raise UsageError("trace: a config given as data needs output_dir= (or an output_dir field)")
    run_dir = Path(output_dir if output_dir is not None else data.pop("output_dir")).absolute()
    data.pop("output_dir", None)
    import yaml

    # The config is written where its relative paths mean what they meant to the caller.
    with tempfile.TemporaryDirectory(prefix="kerneltracer-config-") as tmp:
        path = Path(tmp) / "config.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return _trace_file(path, run_dir, jobs, tracers, models, force, preload, on_progress)


def _trace_file(
    path: Path,
    output_dir: PathLike | None,
    jobs: int,
    tracers: Sequence[str],
    models: Sequence[str],
    force: bool,
    preload: bool,
    on_progress: Callable[[ProgressEvent], None] | None,
) -> Run:
    from kerneltracer.orchestrator import RunRequest

    request = RunRequest(
        config_path=path,
        output_dir=None if output_dir is None else Path(output_dir),
        only=tuple(tracers),
        models=tuple(models),
        force=force,
        jobs=jobs,
        preload=preload,
    )
    return _execute(request, on_progress)


def _execute(request: Any, on_progress: Callable[[ProgressEvent], None] | None) -> Run:
    from kerneltracer.errors import RunDirError
    from kerneltracer.orchestrator import open_run as open_session
    from kerneltracer.orchestrator.events import NullObserver

    if request.jobs < 1:
        raise UsageError(f"trace: jobs must be at least 1, not {request.jobs}")
    observer = NullObserver() if on_progress is None else _CallbackObserver(on_progress)
    with open_session(request) as session:
        result = session.execute(observer)
        run_dir = session.run_dir
    if result.stopped_by is not None:
        raise RunDirError(
            f"{result.stopped_by}: the run stopped (running jobs were marked interrupted); "
            "free space and run again to finish it"
        )
    if result.interrupted:
        raise KeyboardInterrupt
    return Run(run_dir)


def _config_data(config: Mapping[str, Any] | Sequence[ModelSpec]) -> dict[str, Any]:
    if isinstance(config, Mapping):
        data = dict(config)
        entries = list(data.get("models") or [])
    elif isinstance(config, Sequence) and not isinstance(config, bytes):
        data = {}
        entries = list(config)
    else:
        raise UsageError(
            f"trace: config must be a file path, a mapping or a list of models, "
            f"not {type(config).__name__}"
        )
    data["models"] = [_model_entry(e) for e in entries]
    for name in ("frameworks",):  # interpreter paths, relative to the caller
        for fw in (data.get(name) or {}).values():
            if isinstance(fw, dict) and isinstance(fw.get("python"), str) and "/" in fw["python"]:
                fw["python"] = str(Path(fw["python"]).absolute())
    return data


def _model_entry(entry: ModelSpec) -> Any:
    if isinstance(entry, str):
        local = Path(entry)
        return {"path": str(local.absolute())} if local.exists() else {"id": entry}
    if isinstance(entry, Mapping):
        out = dict(entry)
        if isinstance(out.get("path"), str):
            out["path"] = str(Path(out["path"]).absolute())
        return out
    return entry  # validation names it: "models.N: ..."


@dataclass(frozen=True)
class TimelineResult:
    """The timeline analysis of chrome traces (``kerneltracer timeline``), one per trace."""

    analyses: list[TraceAnalysis]

    @property
    def summary(self) -> pd.DataFrame:
        """One row per trace: rank, source_file, end_to_end_latency_us, mean_step_us, steps,
        gpu_busy_pct, gpu_idle_pct, compute_us, communication_pct, bottleneck,
        comm_comp_overlap_pct (HTA's get_comm_comp_overlap)."""
        from kerneltracer.analysis.timeline.pipeline import rank_row

        rows = []
        for a in self.analyses:
            row = asdict(rank_row(a))
            row.pop("temporal_breakdown", None)
            rows.append(row)
        return _frame(rows, _SUMMARY_COLUMNS)

    @property
    def breakdown(self) -> pd.DataFrame:
        """Time by category per trace (interval unions: overlap counted once): trace,
        rank, category, duration_us, percentage."""
        rows = [
            {
                "trace": str(a.trace.path),
                "rank": a.rank,
                "category": b.category,
                "duration_us": b.duration_us,
                "percentage": b.percentage,
            }
            for a in self.analyses
            for b in a.bottleneck.timeline_breakdown
        ]
        return _frame(rows, ("trace", "rank", "category", "duration_us", "percentage"))

    @property
    def ops(self) -> pd.DataFrame:
        """Op → kernel attribution per trace: ``trace`` then the columns of ``ops.csv``."""
        from kerneltracer.core.ops_csv import OPS_COLUMNS

        return self._op_table("rows", OPS_COLUMNS)

    @property
    def kernels(self) -> pd.DataFrame:
        """Kernels by op per trace: ``trace`` then the columns of ``kernels_by_op.csv``."""
        from kerneltracer.core.ops_csv import KERNEL_COLUMNS

        return self._op_table("kernels", KERNEL_COLUMNS)

    def _op_table(self, part: str, columns: tuple[str, ...]) -> pd.DataFrame:
        """One of the op table's parts (``rows`` or ``kernels``) of every trace, each
        record built once (what ops.csv / kernels_by_op.csv write)."""
        rows = []
        for a in self.analyses:
            if a.ops is None:
                continue
            trace = str(a.trace.path)
            for item in getattr(a.ops.table, part):
                record = item.record()
                rows.append({"trace": trace, **{c: record[c] for c in columns}})
        return _frame(rows, ("trace", *columns))

    @property
    def collective_waits(self) -> pd.DataFrame:
        """Per rank, time waiting in collectives matched across the traces (empty with one
        trace): rank, source_file, collective_calls, matched_calls, collective_us, wait_us,
        wait_pct, waited_on_us (the others' wait on this rank). Definitions:
        docs/howto/multi-rank-timeline.md."""
        figures = self._cross_rank()
        rows = [asdict(r) for r in figures.ranks] if figures else []
        return _frame(rows, _WAIT_COLUMNS)

    @property
    def step_stragglers(self) -> pd.DataFrame:
        """The straggler rank of each ProfilerStep two or more traces hold: step, rank,
        basis (collective_wait or step_duration), value_us, ranks."""
        figures = self._cross_rank()
        rows = [asdict(s) for s in figures.steps] if figures else []
        return _frame(rows, _STEP_STRAGGLER_COLUMNS)

    def _cross_rank(self) -> MultiRankFigures | None:
        from kerneltracer.analysis.timeline.analyses.multirank import cross_rank

        return cross_rank([a.collectives for a in self.analyses if a.collectives is not None])

    def reports(self) -> list[dict[str, Any]]:
        """The JSON report of each trace (``report.json``)."""
        from kerneltracer.analysis.timeline.pipeline import report_document

        return [report_document(a) for a in self.analyses]


_SUMMARY_COLUMNS = (
    "rank",
    "source_file",
    "end_to_end_latency_us",
    "mean_step_us",
    "steps",
    "gpu_busy_pct",
    "gpu_idle_pct",
    "compute_us",
    "communication_pct",
    "bottleneck",
    "comm_comp_overlap_pct",
)
_WAIT_COLUMNS = (
    "rank",
    "source_file",
    "collective_calls",
    "matched_calls",
    "collective_us",
    "wait_us",
    "wait_pct",
    "waited_on_us",
)
_STEP_STRAGGLER_COLUMNS = ("step", "rank", "basis", "value_us", "ranks")


def timeline(
    traces: PathLike | Sequence[PathLike],
    *,
    ops: bool = True,
    device: str | None = None,
    include_last_step: bool = False,
    strict: bool = False,
) -> TimelineResult:
    """Analyse profiler chrome traces (torch.profiler / Kineto / vLLM, .json or .json.gz;
    a directory stands for the traces under it, one per rank): bottleneck, time by category,
    with several ranks the waits in collectives and the straggler of each step, and, with
    ``ops``, op → kernel attribution with a roofline on ``device`` (default: the trace's
    GPU). Writes nothing."""
    from kerneltracer.analysis.timeline.pipeline import OpsOptions, analyze_file
    from kerneltracer.analysis.timeline.writer import expand_traces
    from kerneltracer.inputguard import check_input_file

    paths = expand_traces(_paths(traces))
    for path in paths:
        check_input_file(path, "trace file")  # InputFileError: the CLI's one line
    if device is not None:
        _device(device)
    options = OpsOptions(None, device, None) if ops else None
    return TimelineResult(
        [
            analyze_file(
                path, rank=i, include_last_step=include_last_step, strict=strict, ops=options
            )
            for i, path in enumerate(paths)
        ]
    )


def _paths(given: PathLike | Sequence[PathLike]) -> list[Path]:
    paths = [Path(given)] if isinstance(given, str | os.PathLike) else [Path(p) for p in given]
    if not paths:
        raise UsageError("no input given")
    return paths


@dataclass(frozen=True)
class LogsResult:
    """TORCH_TRACE structured logs parsed (``kerneltracer logs``), one entry per log."""

    sources: list[Path]
    stats: list[ParseStats]
    out_dirs: list[Path | None]  # where the rendered pages are (None: not rendered)
    _compiles: list[dict[str, Any]] = field(repr=False)
    _envelopes: list[dict[str, Any]] = field(repr=False)

    @property
    def compiles(self) -> pd.DataFrame:
        """One row per compile id: source, compile_id, display_id, event_count,
        has_failure, fail_type, failure_reason, restarts, co_name, co_filename."""
        return _frame(self._compiles, _COMPILE_COLUMNS)

    @property
    def envelopes(self) -> pd.DataFrame:
        """Envelope types per log: source, type, count."""
        return _frame(self._envelopes, ("source", "type", "count"))

    @property
    def parse_failures(self) -> pd.DataFrame:
        """Lines that failed to parse per log, by kind: source, kind, count."""
        rows = [
            {"source": str(src), "kind": kind, "count": getattr(st, kind)}
            for src, st in zip(self.sources, self.stats, strict=True)
            for kind in st.FAILURE_KINDS
        ]
        return _frame(rows, ("source", "kind", "count"))


_COMPILE_COLUMNS = (
    "source",
    "compile_id",
    "display_id",
    "event_count",
    "has_failure",
    "fail_type",
    "failure_reason",
    "restarts",
    "co_name",
    "co_filename",
)


def logs(log_paths: PathLike | Sequence[PathLike], out_dir: PathLike | None = None) -> LogsResult:
    """Parse TORCH_TRACE logs (a log, or a directory of per-rank logs each). With
    ``out_dir`` the tlparse-style pages are rendered there too (one sub-directory per log
    when several are given); without, only the tables come back and nothing is kept."""
    from kerneltracer.analysis.structured_logs import api as sl

    sources = _paths(log_paths)
    stats, outs, compiles, envelopes = [], [], [], []
    for i, source in enumerate(sources):
        with tempfile.TemporaryDirectory(prefix="kerneltracer-logs-") as tmp:
            if out_dir is None:
                inter = Path(tmp) / "inter"
                parsed = sl.parse(source, inter, write_events=False)
                out: Path | None = None
            else:
                out = Path(out_dir) if len(sources) == 1 else Path(out_dir) / f"{i}-{source.stem}"
                parsed, _ = sl.run(source, out, keep_intermediate=True, overwrite=True)
                inter = out / sl.INTERMEDIATE_SUBDIR
            compiles += _compile_rows(source, inter)
        stats.append(parsed.stats)
        outs.append(out)
        counts = parsed.manifest.get("envelope_counts") or {}
        envelopes += [
            {"source": str(source), "type": t, "count": n} for t, n in sorted(counts.items())
        ]
    return LogsResult(sources, stats, outs, compiles, envelopes)


def _compile_rows(source: Path, inter: Path) -> list[dict[str, Any]]:
    import orjson

    rows = []
    for path in sorted(inter.glob("**/by_compile_id/*/summary.json")):
        doc = orjson.loads(path.read_bytes())
        metrics = doc.get("metrics") or {}
        rows.append(
            {
                "source": str(source),
                "compile_id": doc.get("compile_id"),
                "display_id": doc.get("display_id"),
                "event_count": doc.get("event_count"),
                "has_failure": doc.get("has_failure"),
                "fail_type": doc.get("fail_type"),
                "failure_reason": doc.get("failure_reason"),
                "restarts": len(doc.get("restart_reasons") or []),
                "co_name": metrics.get("co_name"),
                "co_filename": metrics.get("co_filename"),
            }
        )
    return rows


def compile_health(
    inputs: Run | PathLike | Sequence[PathLike],
) -> CompileHealth:
    """Compile health of a run (a :class:`Run` or a run dir) or of TORCH_TRACE logs you
    already have (logs, directories of logs, ``kerneltracer logs`` outputs; one row each)."""
    from kerneltracer.analysis.compile_health.fleet import logs_health, run_health
    from kerneltracer.core.layout import RunPaths

    if isinstance(inputs, Run):
        return CompileHealth(run_health(inputs.path))
    paths = _paths(inputs)
    for path in paths:
        if not path.exists():
            raise InputFileError(f"{path}: no such file or directory")
    if len(paths) == 1 and paths[0].is_dir() and RunPaths(paths[0]).jobs.is_dir():
        return CompileHealth(run_health(paths[0]))
    return CompileHealth(logs_health(paths))
