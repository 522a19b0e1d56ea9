"""Replay a corpus: run every selected signature on real inputs, in isolated workers.

Signatures go to ``python -m kerneltracer.worker.replay.main`` in batches (one process
start per batch, not per op). The worker appends one result line per signature as it
finishes, so when an op crashes the worker (SIGSEGV, abort, OOM kill) or hangs, the parent
marks exactly that signature ``crashed`` / ``timeout`` and starts a new worker on the rest
of the batch. A hang is detected per signature: no new result for ``timeout_s``.
"""

from __future__ import annotations

import fnmatch
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from kerneltracer.corpus.model import Signature
from kerneltracer.errors import KernelTracerError, UsageError
from kerneltracer.process.supervisor import WorkerProcess, describe_exit

DEVICES = ("cpu", "cuda")
STATUSES = ("ok", "mismatch", "failed", "crashed", "timeout")
_POLL_S = 0.02
_STARTUP_S = 300.0  # a worker's imports on a loaded machine, before the first op starts


@dataclass(frozen=True)
class ReplayOptions:
    device: str = "cpu"
    repeats: int = 5
    batch_size: int = 64
    timeout_s: float = 60.0  # per signature
    threads: int | None = 1  # torch intra-op threads in the worker (None: torch's default)
    python: str = sys.executable
    # Modules the worker imports first: a backend's extension that registers its kernels
    # (PrivateUse1) or custom ops, so their signatures resolve.
    imports: tuple[str, ...] = ()


@dataclass
class ReplayResult:
    sig: Signature
    status: str  # one of STATUSES
    reason: str | None = None
    time_us: float | None = None  # median per call
    got: list[Any] = field(default_factory=list)  # [shape, dtype] of each output tensor

    @property
    def total_us(self) -> float | None:
        """Estimated time of all the run's calls of this signature."""
        return None if self.time_us is None else self.time_us * self.sig.calls


def select(
    sigs: list[Signature], ops: str | None = None, top: int | None = None
) -> list[Signature]:
    """Signatures whose op matches the glob (``aten.mm*``, ``*softmax*``), most calls first."""
    chosen = sigs
    if ops:
        patterns = [p.strip() for p in ops.split(",") if p.strip()]
        chosen = [s for s in sigs if any(_matches(s.op, p) for p in patterns)]
    if top is not None:
        if top < 1:
            raise UsageError(f"--top must be at least 1, got {top}")
        chosen = sorted(chosen, key=lambda s: (-s.calls, s.op, s.sig_id))[:top]
    return chosen


def _matches(op: str, pattern: str) -> bool:
    # "addmm" / "aten.addmm" match every overload; globs match the full name.
    bare = op.removeprefix("aten.")
    return any(
        fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(name, pattern + ".*")
        for name in (op, bare)
    )


def replay(
    sigs: list[Signature],
    options: ReplayOptions,
    on_result: Callable[[ReplayResult], None] | None = None,
) -> list[ReplayResult]:
    if options.device not in DEVICES:
        raise UsageError(f"unknown device {options.device!r}; choose one of: {', '.join(DEVICES)}")
    results: list[ReplayResult] = []
    with tempfile.TemporaryDirectory(prefix="kt-replay-") as tmp:
        for start in range(0, len(sigs), options.batch_size):
            batch = sigs[start : start + options.batch_size]
            for result in _run_batch(batch, options, Path(tmp) / f"batch-{start}"):
                results.append(result)
                if on_result is not None:
                    on_result(result)
    return results


def _run_batch(
    batch: list[Signature], options: ReplayOptions, stem: Path
) -> Iterable[ReplayResult]:
    pending = list(batch)
    attempt = 0
    while pending:
        attempt += 1
        out = Path(f"{stem}-{attempt}.results.jsonl")
        done, ended = _run_worker(pending, options, Path(f"{stem}-{attempt}.json"), out)
        yield from done
        pending = pending[len(done) :]
        if pending and ended is not None:
            yield ReplayResult(pending[0], ended[0], ended[1])  # the one that took it down
            pending = pending[1:]


def _run_worker(
    batch: list[Signature], options: ReplayOptions, batch_file: Path, out: Path
) -> tuple[list[ReplayResult], tuple[str, str] | None]:
    """Results of the signatures the worker finished, and how it ended if it did not."""
    payload = {
        "device": options.device,
        "repeats": options.repeats,
        "threads": options.threads,
        "imports": list(options.imports),
        "parent": os.getpid(),
        "signatures": [
            {
                "sig_id": s.sig_id,
                "op": s.op,
                "inputs": s.inputs,
                "kwargs": s.kwargs,
                "outputs": s.outputs,
            }
            for s in batch
        ],
    }
    batch_file.write_bytes(orjson.dumps(payload))
    out.write_bytes(b"")
    cmd = [options.python, "-m", "kerneltracer.worker.replay.main", str(batch_file), str(out)]
    log = out.with_suffix(".log")
    log.write_bytes(b"")  # a file, not a pipe: a chatty op must not block on it
    proc = WorkerProcess.spawn(cmd, dict(os.environ), Path.cwd(), log)
    try:
        ended = _watch(proc, out, options.timeout_s)
    except BaseException:  # interrupted: the worker goes with us
        _kill(proc)
        raise
    _kill(proc)  # what it started and left behind
    lines = [orjson.loads(line) for line in out.read_bytes().splitlines() if line.strip()]
    if not lines and ended is None:
        # It died before its first op (a bad --import, a broken torch): every worker would.
        raise KernelTracerError(
            f"replay worker could not start: {_exit_reason(proc.returncode, log)}"
        )
    lines = [row for row in lines if "worker" not in row]
    done = [_result(sig, row) for sig, row in zip(batch, lines, strict=False)]
    if ended is None and len(done) < len(batch):
        ended = ("crashed", _exit_reason(proc.returncode, log))
    return done, ended if len(done) < len(batch) else None


def _watch(proc: WorkerProcess, out: Path, timeout_s: float) -> tuple[str, str] | None:
    size, last = 0, time.monotonic()
    while proc.poll() is None:
        time.sleep(_POLL_S)
        now_size = out.stat().st_size
        if now_size != size:
            size, last = now_size, time.monotonic()
        elif time.monotonic() - last > (timeout_s if size else _STARTUP_S):
            _kill(proc)
            if not size:
                return ("crashed", f"worker did not start within {_STARTUP_S:g} s")
            return ("timeout", f"no result after {timeout_s:g} s")
    return None


def _kill(proc: WorkerProcess) -> None:
    proc.kill_leftovers()  # the group and any descendant that left it


def _exit_reason(code: int | None, log: Path) -> str:
    stderr = log.read_bytes()[-8192:].decode(errors="replace")
    tail = next((ln for ln in reversed(stderr.strip().splitlines()) if ln.strip()), "")
    why = f"worker {describe_exit(code)}"
    return f"{why}: {tail}"[:300] if tail else why


def _result(sig: Signature, row: dict[str, Any]) -> ReplayResult:
    return ReplayResult(
        sig=sig,
        status=str(row.get("status", "failed")),
        reason=row.get("reason"),
        time_us=row.get("time_us"),
        got=list(row.get("got") or []),
    )
