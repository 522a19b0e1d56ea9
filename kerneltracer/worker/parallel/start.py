"""How a rank process starts: forked from its launcher, or a fresh interpreter.

A fresh interpreter pays its imports (torch, transformers: seconds) once per rank. The
launcher is the job's worker, usually itself forked from the preloaded worker server, so it
holds those modules already, and has run no op, started no thread pool and made no CUDA
context: a fork of it is a rank at its first line of work. A worker that was spawned imports
its framework once, then forks every rank (one import instead of ``world_size`` at once).

Isolation is the same either way: a rank stays in the launcher's process group (the
supervisor's group kill and tree sampling cover it), dies with the launcher (its own
parent-death signal, armed in :func:`kerneltracer.worker.parallel.rank.main`), writes its
own log, and names itself ``kt-rank-<r>`` (what the supervisor's memory check reports).

A rank is a fresh interpreter when what its tracer needs is read once, at import: a tracer
that declares ``fresh_interpreter`` (torch_compile: ``TORCH_TRACE``, each rank its own dir,
and inductor's cache dir are read when torch is imported), or any ``TORCH_TRACE`` in the
environment. Also when the launcher is not safe to fork (a CUDA context exists).
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from kerneltracer.environ import ENV_RANK_START, KtEnv
from kerneltracer.inputguard import SMALL_FILE, read_input
from kerneltracer.tracers.registry import TRACERS
from kerneltracer.worker.forked import apply_env_to_preloaded, redirect_output, run_then_exit

if TYPE_CHECKING:
    from kerneltracer.core.jobspec import JobSpec

FORK = "fork"
SPAWN = "spawn"


class ForkedRank:
    """A forked rank, with the part of :class:`subprocess.Popen` the launcher uses."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            with contextlib.suppress(ChildProcessError):
                pid, status = os.waitpid(self.pid, os.WNOHANG)
                if pid == self.pid:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self) -> int:
        while (code := self.poll()) is None:
            time.sleep(0.01)
        return code

    def kill(self) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)


RankProcess = subprocess.Popen[bytes] | ForkedRank


def how_to_start(job: JobSpec, env: dict[str, str]) -> tuple[str, str]:
    """``fork`` or ``spawn`` for this job's ranks, and why."""
    cls = TRACERS[job.tracer]
    if KtEnv.read(env).rank_spawn:
        return SPAWN, f"{ENV_RANK_START}=spawn"
    if cls.fresh_interpreter:
        return SPAWN, f"{job.tracer} reads its settings when torch is imported (fresh_interpreter)"
    if env.get("TORCH_TRACE"):
        return SPAWN, "TORCH_TRACE is set: each rank's own trace dir is read at torch's import"
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return SPAWN, "the launcher holds a CUDA context, which a forked rank cannot use"
    return FORK, "forked from the launcher (framework already imported)"


def preload(job: JobSpec) -> None:
    """Import the job's framework once, before the ranks fork (a no-op in a worker forked from
    the preloaded server, which has it already)."""
    from kerneltracer.worker.frameworks.registry import loader_class

    hints: list[str] = []
    with contextlib.suppress(Exception):  # no or a bad config: the ranks' load says so
        config = orjson.loads(
            read_input(Path(job.model.local_dir or "") / "config.json", SMALL_FILE)
        )
        if isinstance(config.get("model_type"), str):
            hints.append(config["model_type"])
    loader_class(job.framework).preload(hints)


def spawn_rank(job_file: Path, rank: int, env: dict[str, str], log: Path) -> RankProcess:
    with open(log, "ab", buffering=0) as out:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kerneltracer.worker.parallel.rank",
                str(job_file),
                # For ps: which rank a process is (RANK is in its environment).
                "--rank",
                str(rank),
            ],
            cwd=job_file.parent,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            close_fds=True,
        )


def fork_rank(job_file: Path, rank: int, env: dict[str, str], log: Path) -> RankProcess:
    launcher = os.getpid()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child ends in os._exit; tests see its effects
        _run_forked(job_file, env, log, launcher)
    return ForkedRank(pid)


def _run_forked(job_file: Path, env: dict[str, str], log: Path, launcher: int) -> None:
    """In the forked child: become the rank, then exit without teardown."""

    def become() -> int:
        # The launcher's handlers are not the rank's: its SIGTERM writes the job's status.
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD, signal.SIGUSR1):
            signal.signal(sig, signal.SIG_DFL)
        os.environ.clear()
        os.environ.update(env)
        redirect_output(str(log))
        # New stream objects: a thread of the launcher (its heartbeat) may have held the old
        # ones' locks at the fork, and that thread does not exist here to release them.
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), line_buffering=True)
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), line_buffering=True)
        os.chdir(job_file.parent)
        apply_env_to_preloaded()
        from kerneltracer.worker.parallel.rank import main

        sys.argv = ["kerneltracer.worker.parallel.rank", str(job_file)]
        return main([str(job_file)], launcher=launcher)

    run_then_exit(become)
