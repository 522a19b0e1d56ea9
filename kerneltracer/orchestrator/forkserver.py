"""The orchestrator's side of a preloaded worker server (``kerneltracer.worker.forkserver``).

One server per framework interpreter: started once, asked to preload the run's model types,
then asked to fork one child per job. A child is not the orchestrator's own child, so the
server relays its exit code; everything else (its process group, tree sampling, kill-tree,
timeout, memory ceiling) works on its pid exactly as for a spawned worker.

If the server refuses (a framework that cannot be preloaded), fails to start or dies, the
caller falls back to spawning: :class:`ServerGone` says why, in one line.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

_START_TIMEOUT_S = 600.0  # a cold import of torch + transformers on a loaded node
_SPAWN_TIMEOUT_S = 30.0
# What an exit code is reported as when the server died before relaying it: the child got
# SIGTERM from its parent-death signal, and its status file says the rest.
_LOST_RC = -int(signal.SIGTERM)


class ServerGone(Exception):
    """The server cannot (or can no longer) start workers; the message says why."""


@dataclass
class ForkServer:
    framework: str
    popen: subprocess.Popen[bytes]
    req_w: int
    resp_r: int
    preload_s: float = 0.0
    failed: list[str] = field(default_factory=list)
    exits: dict[int, int] = field(default_factory=dict)
    children: set[int] = field(default_factory=set)
    replies: list[dict[str, Any]] = field(default_factory=list)
    buffer: bytes = b""
    next_id: int = 0
    gone: str | None = None

    @classmethod
    def start(
        cls,
        python: str,
        framework: str,
        hints: list[str],
        env: dict[str, str],
        log_path: Path,
        label: str = "",
        tracers: list[str] | None = None,
    ) -> ForkServer:
        """Start and preload; raises ServerGone when it refuses or cannot start.
        ``label`` (the run dir) goes on its command line, for ``ps``."""
        req_r, req_w = os.pipe()
        resp_r, resp_w = os.pipe()
        argv = [python, "-m", "kerneltracer.worker.forkserver", str(req_r), str(resp_w)]
        argv += [label] if label else []
        try:
            with open(log_path, "ab", buffering=0) as log:
                popen = subprocess.Popen(
                    argv,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    pass_fds=(req_r, resp_w),
                    start_new_session=True,  # terminal signals are the orchestrator's
                )
        except OSError as exc:
            for fd in (req_r, req_w, resp_r, resp_w):
                os.close(fd)
            raise ServerGone(f"cannot start it: {exc.strerror or exc}") from None
        os.close(req_r)
        os.close(resp_w)
        fcntl.fcntl(resp_r, fcntl.F_SETFL, fcntl.fcntl(resp_r, fcntl.F_GETFL) | os.O_NONBLOCK)
        server = cls(framework, popen, req_w, resp_r)
        try:
            server._send(
                {
                    "op": "preload",
                    "framework": framework,
                    "hints": hints,
                    "tracers": tracers or [],
                }
            )
            ready = server._wait_for(("ready", "refused"), None, _START_TIMEOUT_S)
        except ServerGone:
            server.close(0.0)
            raise
        if ready["op"] == "refused":
            server.close(0.0)
            raise ServerGone(str(ready["why"]))
        server.preload_s = float(ready["seconds"])
        server.failed = list(ready["failed"])
        return server

    def spawn(self, job_file: Path, env: dict[str, str], cwd: Path, log_path: Path) -> int:
        """Fork a worker for ``job_file``; its pid. Raises ServerGone."""
        if self.gone is not None:
            raise ServerGone(self.gone)
        self.next_id += 1
        request = {
            "op": "spawn",
            "id": self.next_id,
            "job_file": str(job_file),
            "env": env,
            "cwd": str(cwd),
            "log": str(log_path),
        }
        self._send(request)
        pid = int(self._wait_for(("started",), self.next_id, _SPAWN_TIMEOUT_S)["pid"])
        self.children.add(pid)
        return pid

    def returncode(self, pid: int) -> int | None:
        """The child's exit code once the server has reaped it, else None."""
        if pid not in self.exits and self.gone is None:
            with contextlib.suppress(ServerGone):
                self._pump(0.0)
        if pid in self.exits:
            return self.exits[pid]
        if self.gone is not None and not _exists(pid):
            return _LOST_RC
        return None

    def pump(self) -> None:
        """Take in what the server has said so far (exits), without waiting."""
        if self.gone is None:
            with contextlib.suppress(ServerGone):
                self._pump(0.0)

    def close(self, grace_s: float = 5.0) -> None:
        """End the server: it stops its remaining children (each takes its tree down)."""
        for fd in (self.req_w, self.resp_r):
            with contextlib.suppress(OSError):
                os.close(fd)
        with contextlib.suppress(OSError):
            self.popen.send_signal(signal.SIGTERM)
        try:
            self.popen.wait(timeout=grace_s + 10.0)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()

    def _send(self, message: dict[str, Any]) -> None:
        data = orjson.dumps(message) + b"\n"
        try:
            while data:
                data = data[os.write(self.req_w, data) :]
        except OSError as exc:
            raise self._died(f"its pipe is closed ({exc.strerror or exc})") from None

    def _wait_for(
        self, ops: tuple[str, ...], ident: int | None, timeout_s: float
    ) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while True:
            for i, message in enumerate(self.replies):
                if message["op"] in ops and (ident is None or message.get("id") == ident):
                    return self.replies.pop(i)
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._died(f"no answer within {timeout_s:g} s")
            self._pump(min(left, 0.5))

    def _pump(self, timeout_s: float) -> None:
        ready, _, _ = select.select([self.resp_r], [], [], timeout_s)
        if not ready:
            if self.popen.poll() is not None:
                raise self._died(f"it exited with code {self.popen.returncode}")
            return
        try:
            chunk = os.read(self.resp_r, 1 << 16)
        except BlockingIOError:
            return
        except OSError as exc:
            raise self._died(str(exc.strerror or exc)) from None
        if not chunk:
            self.popen.poll()
            raise self._died(f"it exited with code {self.popen.returncode}")
        self.buffer += chunk
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            message = orjson.loads(line)
            if message["op"] == "exit":
                self.exits[int(message["pid"])] = int(message["rc"])
            else:
                self.replies.append(message)

    def _died(self, why: str) -> ServerGone:
        self.gone = self.gone or f"the {self.framework} worker server stopped: {why}"
        return ServerGone(self.gone)


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class ForkedChild:
    """A forked worker seen like a ``subprocess.Popen``: pid, poll, wait, returncode."""

    server: ForkServer
    pid: int
    returncode: int | None = None

    @property
    def lost(self) -> str | None:
        """Why the exit code is unknown: the server died before it could relay it."""
        return (
            self.server.gone
            if self.returncode == _LOST_RC and self.pid not in self.server.exits
            else None
        )

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.server.returncode(self.pid)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            rc = self.poll()
            if rc is not None:
                return rc
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout or 0.0)
            time.sleep(0.02)
