"""The preloaded worker: one process per framework interpreter imports the framework once,
then forks one child per job, so a light job pays milliseconds of start-up, not seconds.

``python -m kerneltracer.worker.forkserver REQ_FD RESP_FD [RUN_DIR]``: requests arrive as JSON lines
on REQ_FD, replies leave on RESP_FD (stdout and stderr are the server's log, where import
warnings may go). The orchestrator's side is ``kerneltracer.orchestrator.forkserver``.

- ``{"op": "preload", "framework": F, "hints": [...], "tracers": [...]}`` imports what the
  framework's loader names for those hints, and what those tracers import when they run;
  reply ``{"op": "ready", "pid": ..., "seconds": ..., "failed": [...]}``
  or ``{"op": "refused", "why": ...}`` when the framework cannot be preloaded.
- ``{"op": "spawn", "id": N, "job_file": P, "env": {...}, "cwd": D, "log": L}`` forks;
  reply ``{"op": "started", "id": N, "pid": ...}``. When the child ends:
  ``{"op": "exit", "pid": ..., "rc": ...}`` (negative: killed by that signal, like Popen).

Isolation is the spawned worker's: each child is the leader of a new session, runs with the
job's environment, cwd and log, arms its parent-death signal on this server (which arms its
own on the orchestrator), and ends with ``os._exit``. The server never starts a thread, never
runs an op and never initialises CUDA before forking: a fork is only safe from one thread,
and thread pools or a CUDA context do not survive into a child.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import time
from types import FrameType
from typing import Any

import orjson

from kerneltracer.environ import ENV_ORCHESTRATOR_PID, KtEnv
from kerneltracer.process import lifeline
from kerneltracer.worker.forked import apply_env_to_preloaded, redirect_output, run_then_exit

# The server's children get this long after SIGTERM to take their trees down (their own
# lifeline grace) before the server SIGKILLs their groups and exits.
_STOP_GRACE_S = lifeline.CHILD_GRACE_S + 1.0
_POLL_S = 0.02


class _Server:
    def __init__(self, req_fd: int, resp_fd: int) -> None:
        self.req_fd, self.resp_fd = req_fd, resp_fd
        self.children: set[int] = set()
        # pid → a descriptor that turns readable when that child ends (pidfd_open): an exit
        # wakes the loop at once, so the orchestrator hears of it without a polling delay.
        self.pidfds: dict[int, int] = {}
        self.buffer = b""
        self.stopping = False

    def reply(self, message: dict[str, Any]) -> None:
        data = orjson.dumps(message) + b"\n"
        while data:
            data = data[os.write(self.resp_fd, data) :]

    def serve(self) -> None:
        while not self.stopping:
            ready, _, _ = select.select([self.req_fd, *self.pidfds.values()], [], [], _POLL_S)
            if self.req_fd in ready and not self._read():
                break  # the orchestrator closed its end: it is gone or done
            self._reap()
        self.stop_children()

    def _read(self) -> bool:
        chunk = os.read(self.req_fd, 1 << 16)
        if not chunk:
            return False
        self.buffer += chunk
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            if line.strip():
                self._handle(orjson.loads(line))
        return True

    def _handle(self, request: dict[str, Any]) -> None:
        if request["op"] == "preload":
            self.reply(
                _preload(
                    str(request["framework"]),
                    list(request.get("hints", [])),
                    list(request.get("tracers", [])),
                )
            )
        elif request["op"] == "spawn":
            pid = self._fork(request)
            self.children.add(pid)
            with contextlib.suppress(AttributeError, OSError):  # no pidfds: the poll sees it
                self.pidfds[pid] = os.pidfd_open(pid)
            self.reply({"op": "started", "id": request["id"], "pid": pid})

    def _fork(self, request: dict[str, Any]) -> int:
        if not self.children:
            # From the first child on, SIGTERM (the parent-death signal) must stop the
            # children before the server goes: the loop notices the flag.
            signal.signal(signal.SIGTERM, self._on_term)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child ends in os._exit; tests see its effects
            _run_child(request, self)
        return pid

    def _on_term(self, signum: int, frame: FrameType | None) -> None:
        self.stopping = True

    def _reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self.children.discard(pid)
            fd = self.pidfds.pop(pid, None)
            if fd is not None:
                os.close(fd)
            self.reply({"op": "exit", "pid": pid, "rc": os.waitstatus_to_exitcode(status)})

    def stop_children(self) -> None:
        """SIGTERM every child's group (each takes its own tree down), SIGKILL what stays."""
        for pid in self.children:
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + _STOP_GRACE_S
        while self.children and time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                self._reap()
            time.sleep(_POLL_S)
        for pid in self.children:
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)


def _preload(framework: str, hints: list[str], tracers: list[str]) -> dict[str, Any]:
    from kerneltracer.worker.frameworks.registry import loader_class

    cls = loader_class(framework)
    if cls.preload_refusal is not None:
        return {"op": "refused", "why": cls.preload_refusal}
    t0 = time.monotonic()
    failed = cls.preload(hints)
    # The worker's own modules, so a child starts at its first line of work.
    import kerneltracer.worker.main  # noqa: F401

    failed += _preload_tables(tracers)

    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        # A forked child cannot use a CUDA context its parent made: spawn instead.
        return {"op": "refused", "why": "CUDA was initialised while preloading"}

    return {
        "op": "ready",
        "pid": os.getpid(),
        "seconds": round(time.monotonic() - t0, 3),
        "failed": failed,
    }


def _preload_tables(tracers: list[str]) -> list[str]:
    """The tables a worker looks up, filled: the tracer registry lists its plug-ins (an
    entry-point scan of every installed distribution), each of the run's tracers is imported
    with what it imports when it runs, and every loader is imported (a status records their
    modules' versions). Returns what failed to import; its job reports why."""
    import importlib

    from kerneltracer.tracers.registry import TRACERS
    from kerneltracer.worker.frameworks.registry import version_modules

    failed = []
    try:
        version_modules()
        known = TRACERS.entries
    except Exception:  # a broken plug-in: each job says so in its own status
        return ["tracer registry"]
    for name in tracers:
        if name not in known:
            continue
        try:
            modules = TRACERS[name].preload_modules
        except Exception:
            failed.append(name)
            continue
        for module in modules:
            try:
                importlib.import_module(module)
            except Exception:  # the job imports it again and reports why
                failed.append(module)
    return failed


def _run_child(request: dict[str, Any], server: _Server) -> None:
    """In the forked child: become the job's worker process, then exit without teardown."""

    def become() -> int:
        os.setsid()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        for fd in (server.req_fd, server.resp_fd, *server.pidfds.values()):
            os.close(fd)
        env = dict(request["env"])
        env[ENV_ORCHESTRATOR_PID] = str(os.getppid())  # the parent to outlive: this server
        os.environ.clear()
        os.environ.update(env)
        redirect_output(str(request["log"]))
        os.chdir(request["cwd"])
        apply_env_to_preloaded()
        from kerneltracer.worker.main import main

        sys.argv = ["kerneltracer.worker", str(request["job_file"])]
        return main([str(request["job_file"])])

    run_then_exit(become)


def main(argv: list[str]) -> int:
    # RUN_DIR is only a label: `ps` shows which run a server belongs to.
    if len(argv) not in (2, 3) or not all(a.isdigit() for a in argv[:2]):
        print(
            "usage: python -m kerneltracer.worker.forkserver REQ_FD RESP_FD [RUN_DIR]",
            file=sys.stderr,
        )
        return 2
    server = _Server(int(argv[0]), int(argv[1]))
    # SIGTERM (also the parent-death signal) keeps its default action, end now, until the
    # first fork: there is nothing to stop before, and the loop would read a handler's flag
    # only after the preload, a cold import that takes tens of seconds on a loaded machine.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the orchestrator's to handle
    if not lifeline.arm_parent_death(signal.SIGTERM, KtEnv.read().orchestrator_pid):
        return 1  # the orchestrator is already gone
    server.serve()
    # Without the interpreter's teardown: unloading torch and transformers takes a second or
    # more, and the orchestrator waits for this exit at the end of every run.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
