"""The environment and command line each worker starts with.

Every job gets its own TMPDIR, compiler cache and vLLM RPC path inside its job dir, so
concurrent jobs never share state and a rerun never depends on an earlier one. Workers
never download: the orchestrator resolves models first, workers run with the hub offline.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import orjson

from kerneltracer.core.jobspec import JobSpec
from kerneltracer.core.layout import JobPaths
from kerneltracer.core.parallelspec import ParallelSpec, degrees_problem
from kerneltracer.environ import ENV_GPU_SLOT, ENV_ORCHESTRATOR_PID
from kerneltracer.errors import UnsupportedError
from kerneltracer.inputguard import SMALL_FILE, read_input
from kerneltracer.tracers.registry import TRACERS
from kerneltracer.worker.frameworks.registry import loader_class


def worker_argv(python: str, job_file: Path) -> list[str]:
    return [python, "-m", "kerneltracer.worker", str(job_file)]


def worker_env(
    job: JobSpec,
    job_dir: Path,
    base: Mapping[str, str],
    threads: int,
    gpu: str | None,
) -> dict[str, str]:
    env = common_env(base, threads)
    paths = JobPaths(job_dir)
    paths.tmp.mkdir(parents=True, exist_ok=True)
    env.update(
        {
            "TMPDIR": str(paths.tmp),
            "TORCHINDUCTOR_CACHE_DIR": str(paths.inductor_cache),
            "TRITON_CACHE_DIR": str(paths.triton_cache),
        }
    )
    if job.framework == "vllm":
        # Only vLLM opens sockets there. A deep job dir's socket dir is in the system's
        # temp dir (see JobPaths.rpc), which a SIGKILLed run never cleans: made for every
        # job, each killed run left one behind.
        paths.rpc.mkdir(parents=True, exist_ok=True)
        env["VLLM_RPC_BASE_PATH"] = str(paths.rpc)
    if gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = gpu
        env[ENV_GPU_SLOT] = gpu
    cls = TRACERS.get(job.tracer)
    if cls is not None:
        env.update(cls.worker_env(job_dir, cls.Options.model_validate(job.options)))
    return env


def common_env(base: Mapping[str, str], threads: int) -> dict[str, str]:
    """What every worker of a run shares: also the environment a preloaded worker server
    imports its framework with (libraries read some of it once, at import)."""
    env = dict(base)
    env.update(
        {
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "HF_HUB_DISABLE_TELEMETRY": "1",
            "TOKENIZERS_PARALLELISM": "false",
            "HF_HUB_DISABLE_PROGRESS_BARS": "1",  # progress bars only clutter worker.log
            "PYTHONUNBUFFERED": "1",
            "PYTHONFAULTHANDLER": "1",
            ENV_ORCHESTRATOR_PID: str(os.getpid()),
        }
    )
    # An explicit thread count from the user wins; otherwise share the cores fairly.
    env.setdefault("OMP_NUM_THREADS", str(threads))
    return env


def python_for(framework: str, interpreters: Mapping[str, str]) -> str:
    return interpreters.get(framework) or sys.executable


def visible_gpus(env: Mapping[str, str]) -> list[str]:
    """GPU ids visible to workers, found without importing any framework."""
    if "CUDA_VISIBLE_DEVICES" in env:
        return [g for g in env["CUDA_VISIBLE_DEVICES"].split(",") if g.strip() not in ("", "-1")]
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return []
    return [str(i) for i, line in enumerate(out.stdout.splitlines()) if line.startswith("GPU ")]


def needs_gpu(job: JobSpec, gpus: list[str]) -> bool:
    """Whether the job takes a GPU slot. ``cuda:N`` beyond the visible GPUs takes none:
    waiting for it would never end, so the worker runs and reports the bad device."""
    if job.device.startswith("cuda:"):
        return int(job.device.split(":", 1)[1]) < len(gpus)
    return bool(gpus) and job.device in ("auto", "cuda")


def _first_gpu(job: JobSpec) -> int:
    return int(job.device.split(":", 1)[1]) if job.device.startswith("cuda:") else 0


def refusal(job: JobSpec, gpus: list[str], cpus: int) -> str | None:
    """Why the machine can never run this job (more ranks than GPUs or cores), in one line
    with the numbers; None: it can (perhaps after others end)."""
    count = job.rank_processes
    if count == 1:
        return None
    spec = ParallelSpec.from_json(job.parallel or {})
    # First what no machine could run: the framework's or the model's own reason (its heads,
    # experts or layers) says more than this machine's too few cores.
    try:
        problem = loader_class(job.framework).layout_refusal(job.parallel or {})
    except UnsupportedError:  # no loader here: the worker says so
        problem = None
    problem = problem or _degrees_problem(job, spec)
    if problem is not None:
        return problem
    label = spec.label()
    if needs_gpu(job, gpus):
        have = len(gpus) - _first_gpu(job)
        if count > have:
            return (
                f"parallel {label} needs {count} GPUs (one per rank) from {job.device}, "
                f"{have} visible (CUDA_VISIBLE_DEVICES or nvidia-smi); device: cpu runs the "
                "ranks on gloo"
            )
        return None
    if count > cpus:
        return f"parallel {label} needs {count} CPU cores (one per rank), this machine has {cpus}"
    return None


def _degrees_problem(job: JobSpec, spec: ParallelSpec) -> str | None:
    """The layout against the model's config.json; None when it fits or the config cannot be
    read here (the worker says why)."""
    if not job.model.local_dir:
        return None
    try:
        config = orjson.loads(
            read_input(Path(job.model.local_dir) / "config.json", SMALL_FILE, what="config")
        )
    except Exception:
        return None
    return degrees_problem(config, spec) if isinstance(config, dict) else None


def pick_gpus(job: JobSpec, gpus: list[str], free: list[str]) -> list[str] | None:
    """Free GPUs for the job, one per rank: ``cuda:N`` wants the N-th visible one onwards,
    others take any; None: they are busy (it waits, jobs never share a device)."""
    count = job.rank_processes
    if job.device.startswith("cuda:"):
        first = _first_gpu(job)
        wanted = gpus[first : first + count]
        return wanted if len(wanted) == count and all(g in free for g in wanted) else None
    return free[:count] if len(free) >= count else None
