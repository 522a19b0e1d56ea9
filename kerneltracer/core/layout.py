"""Where everything lives in a run dir, and what each file is called: the one definition.

::

    RUN_DIR/
      run.json                      the run's manifest (run.<shard tag>.json for a shard)
      .kerneltracer[.<tag>].lock    the orchestrator's lock
      downloads/                    download logs and results
      slurm/                        Slurm scripts, logs and the submission record
      report/                       the run report
      jobs/<model slug>/<column>/   one job dir: JOB.json, worker.log, phases.log,
                                    _TRACE_STATUS.json (written last), outputs, tmp/,
                                    analysis/<name>/ (names in core.analysis_record)

A job's key is ``<model slug>/<column>`` with column ``<tracer>[.train][.decode|.generate]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

JOBS_DIR = "jobs"
JOB_FILE = "JOB.json"
STATUS_FILE = "_TRACE_STATUS.json"
WORKER_LOG = "worker.log"
PHASE_LOG = "phases.log"
JOB_TMP_DIR = "tmp"
RUN_MANIFEST = "run.json"
DOWNLOADS_DIR = "downloads"
SLURM_DIR = "slurm"
REPORT_DIR = "report"
LOGS_DIR = "logs"  # the run's own logs (preloaded worker servers)

_MODES = ("train",)
_PHASES = ("decode", "generate")


def manifest_name(shard_tag: str | None = None) -> str:
    """Each shard writes its own manifest, so concurrent shards never clobber each other's."""
    return RUN_MANIFEST if shard_tag is None else f"run.{shard_tag}.json"


def is_manifest_name(name: str) -> bool:
    return name == RUN_MANIFEST or (name.startswith("run.") and name.endswith(".json"))


def lock_name(shard_tag: str | None = None) -> str:
    return ".kerneltracer.lock" if shard_tag is None else f".kerneltracer.{shard_tag}.lock"


def job_dir(run_dir: Path | str, key: str) -> Path:
    # An f-string, not Path joins: planning thousands of jobs builds one of these per job.
    return Path(f"{run_dir}/{JOBS_DIR}/{key}")


def is_safe_key(key: str) -> bool:
    """``slug/column`` with nothing that climbs out of ``jobs/`` (keys may come from files)."""
    parts = PurePosixPath(key).parts
    return len(parts) == 2 and not key.startswith("/") and ".." not in parts


@dataclass(frozen=True)
class JobKey:
    """What a job key alone says (a job dir without a readable status has nothing else)."""

    slug: str
    column: str
    tracer: str
    mode: str
    phase: str

    @classmethod
    def parse(cls, key: str) -> JobKey:
        slug, _, column = key.partition("/")
        tracer, *suffixes = column.split(".")
        mode = next((s for s in suffixes if s in _MODES), "eval")
        phase = next((s for s in suffixes if s in _PHASES), "prefill")
        return cls(slug, column, tracer, mode, phase)


def job_key(slug: str, tracer: str, mode: str, phase: str) -> str:
    return (
        f"{slug}/{tracer}"
        + ("" if mode == "eval" else f".{mode}")
        + ("" if phase == "prefill" else f".{phase}")
    )
