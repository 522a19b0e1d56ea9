"""``slurm submit`` / ``slurm resubmit``: write the scripts, submit, keep a record.

The record (``RUN_DIR/slurm/submission.json``) lists every array submitted for the run and
which shards it ran, so ``slurm status`` knows which Slurm job answers for which shard and
``resubmit`` re-runs only the shards that still have incomplete jobs.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, Field

from kerneltracer.config import RunConfig
from kerneltracer.core.jobspec import JobSpec, slugify
from kerneltracer.core.layout import RunPaths
from kerneltracer.core.rundir import JobRecord, RunDir
from kerneltracer.core.state import job_state, to_run
from kerneltracer.core.status import now_iso
from kerneltracer.errors import RunDirError, SlurmError, UsageError
from kerneltracer.jsonio import atomic_write_json, atomic_write_text, read_json
from kerneltracer.orchestrator import run_dir_for
from kerneltracer.orchestrator.expand import plan_jobs
from kerneltracer.orchestrator.models import resolve_cached
from kerneltracer.orchestrator.planning import load_config
from kerneltracer.orchestrator.shard import MAX_SHARDS, split_jobs
from kerneltracer.slurm import cluster
from kerneltracer.slurm.fit import fit
from kerneltracer.slurm.partition import Partition
from kerneltracer.slurm.ranks import fit_ranks
from kerneltracer.slurm.scripts import (
    ScriptSpec,
    check_time,
    format_time,
    render_array,
    render_download,
    task_seconds,
)

# Looks up a partition's nodes and limits (None: the cluster's default partition).
_PartitionLookup = Callable[[str | None], Partition]


class ArraySubmission(BaseModel):
    job_id: str
    tasks: list[int]
    submitted_at: str
    dependency: str | None = None


class SubmissionRecord(BaseModel):
    schema_version: int = 1
    config: str
    run_dir: str
    shards: int
    partition: str | None = None  # --partition of the submit, kept for resubmit
    max_parallel: int | None = None
    download_job: str | None = None
    arrays: list[ArraySubmission] = Field(default_factory=list)


@dataclass
class Prepared:
    spec: ScriptSpec
    download_script: str
    array_script: str
    max_parallel: int | None
    partition: Partition | None = None  # what the request was checked against, if anything
    notes: list[str] = field(default_factory=list)  # values fitted to the partition
    partition_option: str | None = None  # --partition, kept in the record for resubmit

    @property
    def download_path(self) -> Path:
        return self.spec.paths.slurm_download_script

    @property
    def array_path(self) -> Path:
        return self.spec.paths.slurm_array_script

    def array_args(self, tasks: list[int], dependency: str | None = None) -> list[str]:
        throttle = f"%{self.max_parallel}" if self.max_parallel else ""
        args = [f"--array={array_spec(tasks)}{throttle}"]
        if dependency is not None:
            args.append(f"--dependency=afterok:{dependency}")
        return args


def kerneltracer_argv() -> tuple[str, ...]:
    """This interpreter's kerneltracer, absolute, so tasks use the same install (venv)."""
    exe = Path(sys.executable).parent / "kerneltracer"
    if exe.is_file() and os.access(exe, os.X_OK):
        return (str(exe.absolute()),)
    return (str(Path(sys.executable).absolute()), "-m", "kerneltracer.cli.main")


def array_spec(tasks: list[int]) -> str:
    """[1, 2, 3, 5] → "1-3,5"."""
    ranges: list[str] = []
    for task in sorted(set(tasks)):
        if ranges and ranges[-1].split("-")[-1] == str(task - 1):
            ranges[-1] = f"{ranges[-1].split('-')[0]}-{task}"
        else:
            ranges.append(str(task))
    return ",".join(ranges)


def prepare(
    config_path: Path,
    *,
    partition: str | None = None,
    array_size: int | None = None,
    max_parallel: int | None = None,
    lookup: _PartitionLookup | None = None,
) -> Prepared:
    """Scripts for CONFIG (CLI options override the config's ``slurm:`` section).

    With ``lookup``, the request is checked against the partition first: what no node can
    run is refused, unset values are fitted (see :mod:`kerneltracer.slurm.fit`)."""
    cfg, base_dir = load_config(config_path)
    run_dir = run_dir_for(cfg, base_dir, config_path, None)
    jobs = plan_jobs(cfg, base_dir)
    settings = cfg.slurm
    if partition is not None:
        settings = settings.model_copy(update={"partition": partition})
    models = len({j.model.slug for j in jobs})
    count = array_size or settings.array_size or max(1, models)
    if not 1 <= count <= MAX_SHARDS:
        raise UsageError(f"--array-size {count}: must be between 1 and {MAX_SHARDS}")
    settings, notes, world = fit_ranks(settings, jobs)
    task_time = _task_time(cfg, jobs, count)
    download_time = format_time(cfg.download.timeout_s * _waves(models, cfg) + 300)
    part = None
    if lookup is not None:
        part = lookup(settings.partition)
        fitted = fit(settings, part, task_time, download_time)
        settings, task_time, download_time = fitted.settings, fitted.task_time, fitted.download_time
        notes += fitted.notes
    spec = ScriptSpec(
        kerneltracer=kerneltracer_argv(),
        config=config_path.resolve(),
        run_dir=run_dir,
        job_name="kt-" + slugify(config_path.stem),
        shards=count,
        settings=settings,
        task_time=task_time,
        download_time=download_time,
        one_node=world > 1,
    )
    return Prepared(
        spec,
        render_download(spec),
        render_array(spec),
        max_parallel or settings.max_parallel,
        part,
        notes,
        partition,
    )


def _waves(models: int, cfg: RunConfig) -> int:
    return max(1, -(-models // cfg.download.max_workers))


def _task_time(cfg: RunConfig, jobs: list[JobSpec], count: int) -> str:
    s = cfg.slurm
    if s.time is not None:
        return check_time(s.time)
    worst = max(
        (
            # A multi-rank job holds one of the task's -j slots per rank while it runs.
            task_seconds(
                [j.timeout_s * min(j.rank_processes, s.jobs) for j in shard], s.jobs, s.signal_s
            )
            for shard in split_jobs(jobs, count).values()
        ),
        default=0.0,
    )
    return format_time(worst)


def write_scripts(prepared: Prepared) -> None:
    prepared.spec.logs_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(prepared.download_path, prepared.download_script)
    atomic_write_text(prepared.array_path, prepared.array_script)


def submit(prepared: Prepared) -> SubmissionRecord:
    """The download job, then the array depending on it; the record is saved in the run dir."""
    if shutil.which("sbatch") is None:
        raise SlurmError("`sbatch` not found: is Slurm installed and on PATH?")
    write_scripts(prepared)
    spec = prepared.spec
    download = cluster.sbatch(prepared.download_path)
    tasks = list(range(1, spec.shards + 1))
    array = cluster.sbatch(prepared.array_path, prepared.array_args(tasks, download))
    record = SubmissionRecord(
        config=str(spec.config),
        run_dir=str(spec.run_dir),
        shards=spec.shards,
        partition=prepared.partition_option,
        max_parallel=prepared.max_parallel,
        download_job=download,
        arrays=[
            ArraySubmission(job_id=array, tasks=tasks, submitted_at=now_iso(), dependency=download)
        ],
    )
    save_record(spec.run_dir, record)
    return record


def _record_path(run_dir: Path) -> Path:
    return RunPaths(run_dir).slurm_record


def save_record(run_dir: Path, record: SubmissionRecord) -> None:
    atomic_write_json(_record_path(run_dir), record.model_dump(mode="json"))


def load_record(run_dir: Path) -> SubmissionRecord:
    path = _record_path(run_dir)
    try:
        return SubmissionRecord.model_validate(read_json(path))
    except FileNotFoundError:
        raise RunDirError(
            f"{run_dir} has no Slurm submission ({path} is missing); "
            "use `kerneltracer slurm submit`"
        ) from None
    except (OSError, ValueError) as exc:
        raise RunDirError(f"{path} is unreadable: {exc}") from None


def shard_jobs(record: SubmissionRecord) -> dict[int, list[JobSpec]]:
    """Every shard's jobs, with hub revisions resolved as a task's ``run`` would resolve them."""
    cfg, base_dir = load_config(Path(record.config))
    return split_jobs(resolve_cached(plan_jobs(cfg, base_dir)), record.shards)


def job_records(run_dir: Path, jobs: list[JobSpec]) -> dict[str, JobRecord]:
    run = RunDir(run_dir)
    return {job.key: run.record(job.key) for job in jobs}


def incomplete_jobs(
    run_dir: Path, jobs: list[JobSpec], records: dict[str, JobRecord] | None = None
) -> list[JobSpec]:
    """The jobs ``run --shard`` would run: the planner's own definition of done."""
    records = records or job_records(run_dir, jobs)
    specs = [_as_recorded(job, records[job.key]) for job in jobs]
    states = {spec.key: job_state(records[spec.key], spec) for spec in specs}
    return to_run(specs, states)


def _as_recorded(job: JobSpec, record: JobRecord) -> JobSpec:
    """A hub model whose revision is not in this machine's cache (a login node may not see
    the nodes' HF cache) is taken at the commit its last run resolved the same revision to:
    the tasks resolve from their cache, which holds that commit, not from the hub."""
    model = job.model
    if model.id is None or model.resolved_revision is not None:
        return job
    recorded = record.raw.get("model") if record.raw is not None else None
    if not isinstance(recorded, dict) or recorded.get("revision") != model.revision:
        return job
    commit = recorded.get("resolved_revision")
    if not isinstance(commit, str):
        return job
    return job.model_copy(update={"model": model.model_copy(update={"resolved_revision": commit})})
