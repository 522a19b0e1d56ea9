"""Which jobs start from a preloaded worker server, and the servers of one run.

A job is forked from its framework's server when preloading is on for that framework and its
tracer does not declare ``fresh_interpreter``; every other job is spawned as before. A server
starts at the first job that can use it, preloading the model types of the jobs that will.
When a server refuses, cannot start or dies, its framework's jobs fall back to spawning for
the rest of the run, and :attr:`Preloader.notes` says so (the CLI prints each note once).
"""

from __future__ import annotations

import contextlib
import select
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from kerneltracer.core.jobspec import JobSpec
from kerneltracer.core.layout import RunPaths
from kerneltracer.inputguard import SMALL_FILE, read_input
from kerneltracer.orchestrator.environment import python_for
from kerneltracer.orchestrator.forkserver import ForkedChild, ForkServer, ServerGone
from kerneltracer.tracers.registry import TRACERS


def preloadable(job: JobSpec) -> bool:
    cls = TRACERS.get(job.tracer)
    return cls is not None and not cls.fresh_interpreter


def model_type(job: JobSpec) -> str | None:
    """The model's ``model_type`` from its local config.json, read without any framework."""
    if not job.model.local_dir:
        return None
    try:
        raw = orjson.loads(read_input(Path(job.model.local_dir) / "config.json", SMALL_FILE))
    except Exception:  # no config yet (the worker reports that), or an unreadable one
        return None
    value = raw.get("model_type") if isinstance(raw, dict) else None
    return value if isinstance(value, str) else None


@dataclass
class Preloader:
    run_dir: Path
    interpreters: Mapping[str, str]
    base_env: dict[str, str]
    off: frozenset[str] = frozenset()  # frameworks whose workers are always spawned
    # A shard's tag: shards on several hosts share the run dir's logs/, each its own logs.
    log_tag: str | None = None
    servers: dict[str, ForkServer] = field(default_factory=dict)
    given_up: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)
    hints: dict[str, list[str]] = field(default_factory=dict)
    tracers: dict[str, list[str]] = field(default_factory=dict)  # framework → its forked ones

    def _log_name(self, framework: str) -> str:
        tag = f".{self.log_tag}" if self.log_tag else ""
        return f"worker-server.{framework}{tag}.log"

    def plan(self, jobs: Iterable[JobSpec]) -> None:
        """Note the model types each framework's server should import."""
        seen: set[tuple[str, str | None]] = set()
        for job in jobs:
            if job.framework in self.off or not preloadable(job):
                continue
            names = self.tracers.setdefault(job.framework, [])
            if job.tracer not in names:
                names.append(job.tracer)
            # One read of a model's config.json, not one per tracer (5,000 jobs: 1,000 reads).
            if (job.framework, job.model.local_dir) in seen:
                continue
            seen.add((job.framework, job.model.local_dir))
            found = model_type(job)
            types = self.hints.setdefault(job.framework, [])
            if found is not None and found not in types:
                types.append(found)

    def spawn(
        self, job: JobSpec, job_file: Path, env: dict[str, str], cwd: Path, log: Path
    ) -> ForkedChild | None:
        """The job's worker forked from its server; None: spawn it (and why is in notes)."""
        server = self._server(job)
        if server is None:
            return None
        try:
            return ForkedChild(server, server.spawn(job_file, env, cwd, log))
        except ServerGone as exc:
            self._give_up(job.framework, str(exc))
            return None

    def _server(self, job: JobSpec) -> ForkServer | None:
        framework = job.framework
        if framework in self.off or framework in self.given_up or not preloadable(job):
            return None
        server = self.servers.get(framework)
        if server is not None:
            return server
        log_dir = RunPaths(self.run_dir).logs
        try:
            log_dir.mkdir(exist_ok=True)
            server = ForkServer.start(
                python_for(framework, self.interpreters),
                framework,
                self.hints.get(framework, []),
                # torch.cuda.is_available() through NVML, so an import that asks does
                # not initialise the CUDA driver in the server (a fork could not use it).
                {**self.base_env, "PYTORCH_NVML_BASED_CUDA_CHECK": "1"},
                log_dir / self._log_name(framework),
                label=str(self.run_dir),
                tracers=self.tracers.get(framework, []),
            )
        except (ServerGone, OSError) as exc:
            self._give_up(framework, f"the {framework} worker server did not start: {exc}")
            return None
        self.servers[framework] = server
        types = ", ".join(self.hints.get(framework, [])) or "no model types"
        self.notes.append(
            f"{framework} workers start preloaded: server ready in {server.preload_s:.1f} s "
            f"({types})"
        )
        return server

    def _give_up(self, framework: str, why: str) -> None:
        self.given_up.add(framework)
        server = self.servers.pop(framework, None)
        if server is not None:
            with contextlib.suppress(Exception):
                server.close(0.0)
        self.notes.append(f"{why}; its jobs start fresh interpreters from now on")

    def wait(self, timeout_s: float) -> None:
        """Sleep up to ``timeout_s``, less when a server reports an exit: a forked job's end
        is seen when it happens, not at the next poll."""
        fds = {s.resp_r: s for s in self.servers.values() if s.gone is None}
        if not fds:
            time.sleep(timeout_s)
            return
        try:
            ready, _, _ = select.select(list(fds), [], [], timeout_s)
        except (OSError, ValueError):  # a pipe closed under us: the next poll says why
            return
        for fd in ready:
            fds[fd].pump()

    def close(self, grace_s: float) -> None:
        for server in self.servers.values():
            server.close(grace_s)
        self.servers.clear()
