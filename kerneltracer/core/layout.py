"""Where everything lives in a run dir, and what each file is called: the one definition.

::

    RUN_DIR/
      run.json                      the run's manifest (run.<shard tag>.json for a shard)
      .kerneltracer[.<tag>].lock    the orchestrator's lock
      downloads/                    download logs and results
      slurm/                        Slurm scripts, logs and the submission record
      logs/                         the run's own logs (preloaded worker servers)
      report/                       the run report; coverage/, corpus/ (+ replay/),
                                    readiness/, compile_health/ of the fleet commands,
                                    chakra/<key>/ (per-rank traces, kerneltracer export)
      jobs/<model slug>/<column>/   one job dir: JOB.json, worker.log, phases.log,
                                    _TRACE_STATUS.json (written last), outputs, tmp/
                                    (TMPDIR, compiler caches, vLLM sockets),
                                    analysis/<name>/ (_ANALYSIS.json: core.analysis_record),
                                    rank_<r>/ (a parallel job's ranks: core.parallel)

A job's key is ``<model slug>/<column>`` with column ``<tracer>[.train][.decode|.generate]``.
:class:`RunPaths`, :class:`JobPaths` and :class:`ReportPaths` own these names; nothing
outside core spells one out.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path, PurePosixPath

from kerneltracer.jsonio import stable_hash


class _Name(StrEnum):
    """Every file and directory name of a run dir. Private: a caller asks RunPaths /
    JobPaths for the path, so a name changes here alone (tests/spine/test_layout.py fails
    on a copy of one spelt out anywhere outside core/)."""

    RUN_MANIFEST = "run.json"
    LOCK = ".kerneltracer.lock"
    JOBS_DIR = "jobs"
    DOWNLOADS_DIR = "downloads"
    LOGS_DIR = "logs"  # the run's own logs (preloaded worker servers); also under slurm/
    SLURM_DIR = "slurm"
    SLURM_RECORD = "submission.json"
    SLURM_DOWNLOAD_SCRIPT = "download.sbatch"
    SLURM_ARRAY_SCRIPT = "array.sbatch"
    REPORT_DIR = "report"
    COVERAGE_DIR = "coverage"  # the report's sub-dirs that commands write by default
    CORPUS_DIR = "corpus"
    REPLAY_DIR = "replay"  # in the corpus dir
    READINESS_DIR = "readiness"
    COMPILE_HEALTH_DIR = "compile_health"
    CHAKRA_DIR = "chakra"  # per-rank Chakra traces of the parallel jobs, one dir per job
    JOB_FILE = "JOB.json"
    STATUS_FILE = "_TRACE_STATUS.json"
    WORKER_LOG = "worker.log"
    PHASE_LOG = "phases.log"
    TMP_DIR = "tmp"
    INDUCTOR_CACHE = "inductor_cache"
    TRITON_CACHE = "triton_cache"
    VLLM_RPC = "vllm_rpc"
    ANALYSIS_DIR = "analysis"
    ANALYSIS_RECORD = "_ANALYSIS.json"  # in analysis/<name>/: core.analysis_record
    ANALYSIS_LOG = "_ANALYSIS.log"  # the analysis's stdout/stderr, its traceback or crash dump
    VLLM_CACHE = "vllm_cache"  # in tmp/: vLLM's compile cache (cold, never shared)
    PROFILER_EXPORT = "trace.json"  # in tmp/: torch.profiler's export, before it is gzipped
    RANK_DIR_PREFIX = "rank_"  # rank_<r>/: one rank's outputs in a parallel job
    COLLECTIVES = "collectives.jsonl"  # in a rank dir: core.parallel.CollectiveRecord lines


# A unix socket path holds at most 107 bytes; vLLM appends a 37-byte uuid to its base path.
_RPC_PATH_MAX = 64
_RPC_SHORT_PREFIX = "kt-rpc-"

_MODES = ("train",)
_PHASES = ("decode", "generate")
# A parallel layout's suffix part: tp8, ep8, pp2, dp8, fsdp8 (see core.parallelspec).
_LAYOUT_PART = re.compile(r"^(?:tp|ep|pp|dp|fsdp)[1-9][0-9]*$")


@dataclass(frozen=True, slots=True)
class JobPaths:
    """Every path of one job dir (submitit's ``JobPaths`` is the model).

    ``JobPaths(Path())`` gives the names relative to the job dir (``worker.log``), as a status
    file or a report link records them.
    """

    dir: Path

    @property
    def job_file(self) -> Path:
        """``JOB.json``: the spec the worker runs, written by the orchestrator."""
        return self.dir / _Name.JOB_FILE

    @property
    def status(self) -> Path:
        """``_TRACE_STATUS.json``, written last: the job's completion marker."""
        return self.dir / _Name.STATUS_FILE

    @property
    def worker_log(self) -> Path:
        return self.dir / _Name.WORKER_LOG

    @property
    def phase_log(self) -> Path:
        """Start/End records of the worker's phases (load, warmup, trace, write)."""
        return self.dir / _Name.PHASE_LOG

    @property
    def bookkeeping(self) -> tuple[Path, ...]:
        """The files kerneltracer itself writes into every job dir (not tracer outputs)."""
        return (self.worker_log, self.phase_log, self.job_file, self.status)

    @property
    def tmp(self) -> Path:
        """Scratch space (the worker's TMPDIR), removed when the worker tree is gone."""
        return self.dir / _Name.TMP_DIR

    @property
    def inductor_cache(self) -> Path:
        return self.tmp / _Name.INDUCTOR_CACHE

    @property
    def triton_cache(self) -> Path:
        return self.tmp / _Name.TRITON_CACHE

    @property
    def rpc(self) -> Path:
        """Where vLLM's sockets go (``VLLM_RPC_BASE_PATH``): in the tmp dir, or a short path
        in the system's temp dir, unique to the job dir, when that is too long."""
        path = self.tmp / _Name.VLLM_RPC
        if len(str(path)) <= _RPC_PATH_MAX:
            return path
        digest = stable_hash(str(self.dir.resolve()), 12)
        return Path(tempfile.gettempdir()) / f"{_RPC_SHORT_PREFIX}{digest}"

    @property
    def vllm_cache(self) -> Path:
        """vLLM's compile cache (``VLLM_CACHE_ROOT``): cold for every job."""
        return self.tmp / _Name.VLLM_CACHE

    @property
    def profiler_export(self) -> Path:
        """Where torch.profiler exports its chrome trace before it is compressed."""
        return self.tmp / _Name.PROFILER_EXPORT

    @property
    def analyses(self) -> Path:
        """``analysis/``: one sub-dir per analysis run on this job."""
        return self.dir / _Name.ANALYSIS_DIR

    def analysis(self, name: str) -> AnalysisPaths:
        """``analysis/<name>/``: one analysis's outputs, its record and its log."""
        return AnalysisPaths(self.analyses / name)

    def rank(self, rank: int) -> Path:
        """``rank_<r>/``: one rank's outputs in a parallel job (simulated or real ranks)."""
        return self.dir / f"{_Name.RANK_DIR_PREFIX}{rank}"

    def collectives(self, rank: int) -> Path:
        """``rank_<r>/collectives.jsonl``: the rank's collectives, in program order."""
        return self.rank(rank) / _Name.COLLECTIVES


@dataclass(frozen=True, slots=True)
class AnalysisPaths:
    """Where one analysis of one job writes (``JobPaths.analysis``): its folder, its record
    (core.analysis_record) and its log."""

    dir: Path

    @property
    def name(self) -> str:
        return self.dir.name

    @property
    def record(self) -> Path:
        return self.dir / _Name.ANALYSIS_RECORD

    @property
    def log(self) -> Path:
        return self.dir / _Name.ANALYSIS_LOG

    @property
    def relative(self) -> PurePosixPath:
        """The folder relative to the job dir (links in a report that moves with the run)."""
        return PurePosixPath(_Name.ANALYSIS_DIR, self.name)


@dataclass(frozen=True, slots=True)
class RunPaths:
    """Every path of a run dir: its manifests, lock, job dirs, logs and default reports."""

    root: Path

    @property
    def jobs(self) -> Path:
        return self.root / _Name.JOBS_DIR

    def job(self, key: str) -> JobPaths:
        """The paths of the job ``<model slug>/<column>``: the one way to a job dir."""
        # An f-string, not Path joins: planning thousands of jobs builds one of these per job.
        return JobPaths(Path(f"{self.root}/{_Name.JOBS_DIR}/{key}"))

    def manifest(self, shard_tag: str | None = None) -> Path:
        return self.root / manifest_name(shard_tag)

    def lock(self, shard_tag: str | None = None) -> Path:
        return self.root / lock_name(shard_tag)

    @property
    def downloads(self) -> Path:
        """Download logs and results (one per model)."""
        return self.root / _Name.DOWNLOADS_DIR

    @property
    def logs(self) -> Path:
        """The run's own logs (preloaded worker servers)."""
        return self.root / _Name.LOGS_DIR

    @property
    def slurm(self) -> Path:
        """Slurm scripts, logs and the submission record."""
        return self.root / _Name.SLURM_DIR

    @property
    def slurm_logs(self) -> Path:
        return self.slurm / _Name.LOGS_DIR

    @property
    def slurm_record(self) -> Path:
        return self.slurm / _Name.SLURM_RECORD

    @property
    def slurm_download_script(self) -> Path:
        return self.slurm / _Name.SLURM_DOWNLOAD_SCRIPT

    @property
    def slurm_array_script(self) -> Path:
        return self.slurm / _Name.SLURM_ARRAY_SCRIPT

    @property
    def report(self) -> ReportPaths:
        """The run report (``report``'s default ``--out``) and the default outputs of the
        fleet commands inside it."""
        return ReportPaths(self.root / _Name.REPORT_DIR)


@dataclass(frozen=True, slots=True)
class ReportPaths:
    """A report dir: the run report's pages and, beside them, what the fleet commands write
    there by default and the report shows."""

    dir: Path

    @property
    def coverage(self) -> Path:
        return self.dir / _Name.COVERAGE_DIR

    @property
    def corpus(self) -> Path:
        return self.dir / _Name.CORPUS_DIR

    @property
    def replay(self) -> Path:
        """The corpus's replay, where the report's readiness page looks for it."""
        return replay_dir(self.corpus)

    @property
    def readiness(self) -> Path:
        return self.dir / _Name.READINESS_DIR

    @property
    def compile_health(self) -> Path:
        return self.dir / _Name.COMPILE_HEALTH_DIR

    def chakra(self, key: str) -> Path:
        """``chakra/<job key>/``: the job's per-rank Chakra traces (``kerneltracer export``)."""
        return self.dir / _Name.CHAKRA_DIR / PurePosixPath(key)


def replay_dir(corpus_dir: Path) -> Path:
    """``replay``'s default output: beside the corpus it replays."""
    return corpus_dir / _Name.REPLAY_DIR


# Names relative to a run dir, a job dir and a report dir: what a status file records, a
# report links (``jobs/<key>/``) or a message shows.
RUN = RunPaths(Path())
JOB = JobPaths(Path())
REPORT = ReportPaths(Path())


def owned_names() -> frozenset[str]:
    """Every file and directory name the layout defines."""
    return frozenset(n.value for n in _Name)


def manifest_name(shard_tag: str | None = None) -> str:
    """Each shard writes its own manifest, so concurrent shards never clobber each other's."""
    return _Name.RUN_MANIFEST.value if shard_tag is None else f"run.{shard_tag}.json"


def is_manifest_name(name: str) -> bool:
    return name == _Name.RUN_MANIFEST or (name.startswith("run.") and name.endswith(".json"))


def shard_tag(index: int, count: int) -> str:
    """A shard's file-name-safe label: ``shard-2-of-3`` (its manifest's and lock's names)."""
    return f"shard-{index}-of-{count}"


def lock_name(shard_tag: str | None = None) -> str:
    return _Name.LOCK.value if shard_tag is None else f".kerneltracer.{shard_tag}.lock"


def is_lock_name(name: str) -> bool:
    return name.startswith(".kerneltracer") and name.endswith(".lock")


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
    # The parallel layout's label (``tp8.pp2``), "single" for one device.
    layout: str = "single"

    @classmethod
    def parse(cls, key: str) -> JobKey:
        slug, _, column = key.partition("/")
        tracer, *suffixes = column.split(".")
        mode = next((s for s in suffixes if s in _MODES), "eval")
        phase = next((s for s in suffixes if s in _PHASES), "prefill")
        layout = ".".join(s for s in suffixes if _LAYOUT_PART.match(s)) or "single"
        return cls(slug, column, tracer, mode, phase, layout)


def job_key(slug: str, tracer: str, mode: str, phase: str, layout: str = "single") -> str:
    """``slug/tracer[.train][.decode|.generate][.tp8.pp2]``: the layout last, as its label."""
    return (
        f"{slug}/{tracer}"
        + ("" if mode == "eval" else f".{mode}")
        + ("" if phase == "prefill" else f".{phase}")
        + ("" if layout == "single" else f".{layout}")
    )
