"""A multi-rank job (``parallel`` with real weights): the worker launches its ranks and folds
their ends into the job's one status.

The job's worker process stays what the supervisor knows (one process group, one timeout,
the memory ceiling sampled over its whole tree, one ``_TRACE_STATUS.json``) and becomes the
ranks' launcher: it starts ``world_size`` rank processes
(:mod:`kerneltracer.worker.parallel.rank`; forked from it, or fresh interpreters where a
tracer needs one: :mod:`kerneltracer.worker.parallel.start`) in its own process group, with
the usual torch.distributed variables and a free loopback port for the rendezvous. So the
supervisor's group kill, tree sampling and the worker's lifeline (parent-death signal,
subreaper) cover the ranks with no change; a rank also dies with the launcher (its own
parent-death signal).

The launcher watches the ranks. The first that ends badly is the job's failure; the others
are asked (SIGUSR1) for their Python stacks, which say what they were doing (waiting in
which collective), given a short grace to end on their own, then killed. The status names
the first failing rank, how it ended, and what every other rank was doing.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from kerneltracer.core.layout import JOB, JobPaths
from kerneltracer.core.parallelspec import ParallelSpec, layout_problem
from kerneltracer.core.status import ErrorInfo, JobStatus
from kerneltracer.errors import UnsupportedError
from kerneltracer.jsonio import atomic_write_json
from kerneltracer.process.supervisor import describe_exit
from kerneltracer.tracers.registry import TRACERS
from kerneltracer.worker.frameworks.registry import loader_class
from kerneltracer.worker.parallel import flightrec, start
from kerneltracer.worker.parallel.rank import RANK_LOG, RANK_PHASES, RANK_STATUS, STACKS
from kerneltracer.worker.parallel.simulate import ROLES_FILE

if TYPE_CHECKING:
    from kerneltracer.core.jobspec import JobSpec
    from kerneltracer.tracers.base import Tracer, TraceResult
    from kerneltracer.worker.phases import PhaseLog

log = logging.getLogger("kerneltracer.worker.launch")

POLL_S = 0.05
# The launcher asks the ranks of a hung job what they are doing this long before the
# supervisor's timeout would end the job (counted from the worker's own start, as the
# supervisor counts), and waits for their answers until STATUS_RESERVE_S before it: what is
# left is for the kill and the job's status. Answers come in milliseconds on an idle machine;
# the margin is for a loaded one, where a rank is scheduled late.
DEADLINE_MARGIN_S = 5.0
STATUS_RESERVE_S = 1.5
ANSWER_WAIT_S = 5.0  # at most, for the answers of the survivors of a failed peer
SURVIVOR_GRACE_S = 3.0  # for survivors of a failed peer to end on their own before the kill
CAUSE_CHARS = 200  # of a rank's own error in the job's one line (its status has it whole)
# A rank that lost its peer mid-collective fails too, often in the same poll round as the
# peer's death: such an error is the consequence, never the first failure when another is.
PEER_LOST = re.compile(
    r"Connection (reset|closed) by peer|Broken pipe|timed out|Timed out|"
    r"NCCL communicator was aborted|ProcessGroupNCCL.*(watchdog|abort)",
)
_GENERIC_FUNCS = frozenset({"wrapper", "inner", "_fn", "forward", "apply", "__call__", "wait"})
_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)')


class RanksFailed(Exception):
    """The job's status when a rank failed: the first failing rank's, with every rank said."""

    def __init__(self, status: JobStatus, error: ErrorInfo) -> None:
        super().__init__(error.root_cause)
        self.status = status
        self.error = error


@dataclass
class _Rank:
    rank: int
    proc: start.RankProcess
    dir: Path
    ended_at: float | None = None
    status: dict[str, Any] | None = None
    killed_by_us: bool = False
    doing: str | None = None  # what it was doing when a peer failed
    asked_phase: str | None = None  # its phase when the launcher asked what it was doing
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.proc.returncode == 0 and (self.status or {}).get("status") == "ok"


def refuse(job: JobSpec) -> ParallelSpec:
    """What no launch of this job can run, decided before any rank starts."""
    assert job.parallel is not None  # the caller dispatches on it
    refusal = TRACERS[job.tracer].real_ranks_refusal
    if refusal is not None:
        raise UnsupportedError(f"{job.tracer} on real ranks is not built yet: {refusal}")
    refusal = loader_class(job.framework).ranks_refusal
    if refusal is not None:
        raise UnsupportedError(
            f"parallel with weights real is not launched for {job.framework}: {refusal}"
        )
    spec = ParallelSpec.from_json(job.parallel)
    problem = layout_problem(spec, job.mode)
    if problem is not None:
        raise UnsupportedError(problem)
    return spec


def free_port() -> int:
    """A loopback port free now, for the job's rendezvous (rank 0's store binds it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rank_env(base: dict[str, str], rank: int, world: int, port: int) -> dict[str, str]:
    env = dict(base)
    env.update(
        RANK=str(rank),
        LOCAL_RANK=str(rank),
        WORLD_SIZE=str(world),
        LOCAL_WORLD_SIZE=str(world),
        GROUP_RANK="0",
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
    )
    return env


def run(
    job: JobSpec, job_dir: Path, tracer: Tracer[Any], phases: PhaseLog
) -> tuple[TraceResult, list[str]]:
    """Launch the ranks, wait for all, and return the job's result (every rank ok) or raise
    :class:`RanksFailed` naming the first rank that failed."""
    from kerneltracer.tracers.base import TraceResult

    spec = refuse(job)
    world = spec.layout.world_size
    port = free_port()
    paths = JobPaths(job_dir)
    ranks: list[_Rank] = []
    how, why = start.how_to_start(job, dict(os.environ))
    log.info("ranks start by %s: %s", how, why)
    with phases.phase("ranks"):
        try:
            if how == start.FORK:
                start.preload(job)
            for r in range(world):
                rank_dir = paths.rank(r)
                rank_dir.mkdir(parents=True, exist_ok=True)
                env = rank_env(dict(os.environ), r, world, port)
                env.update(flightrec.env(rank_dir, env))
                trace = os.environ.get("TORCH_TRACE")
                if trace:
                    # Per rank, under the same name (the tracer finds it in its rank dir):
                    # the multi-rank logs tlparse reads.
                    env["TORCH_TRACE"] = str(rank_dir / Path(trace).name)
                begin = start.fork_rank if how == start.FORK else start.spawn_rank
                proc = begin(job_dir / JOB.job_file, r, env, rank_dir / RANK_LOG)
                ranks.append(_Rank(r, proc, rank_dir))
            # The launcher's own deadline, before the supervisor's: a job that hangs (the
            # classic distributed hang: a rank never joins a collective) ends saying what
            # every rank was doing, which only the launcher can ask.
            timed_out = _watch(ranks, supervisor_deadline(job.timeout_s))
        finally:
            for rank in ranks:  # only after an error of ours: _watch ends every rank
                if rank.proc.poll() is None:
                    rank.proc.kill()
                    rank.proc.wait()
    for rank in ranks:
        rank.status = _read_status(rank.dir)
    if timed_out:
        raise _timeout(ranks, job.timeout_s)
    bad = [r for r in ranks if not r.ok]
    if bad:
        raise _failure(ranks, bad)
    outputs: list[str] = []
    notes: list[str] = []
    for rank in ranks:
        status = rank.status or {}
        outputs += [o["path"] for o in status.get("outputs", [])]
        notes += [n for n in status.get("notes", []) if n not in notes]
    summary = {
        "layout": spec.label(),
        "world_size": world,
        "real_ranks": True,
        "rank_start": how,
        "ranks": {str(r.rank): (r.status or {}).get("summary", {}) for r in ranks},
    }
    _write_roles(job_dir, spec, ranks)
    outputs.append(ROLES_FILE)
    return TraceResult(outputs=outputs, summary=summary), notes


def _write_roles(job_dir: Path, spec: ParallelSpec, ranks: list[_Rank]) -> None:
    """``roles.json`` as the simulation writes it, each real rank standing for itself: the
    readers of rank jobs (kerneltracer.core.ranks) treat both alike."""
    roles = []
    for rank in ranks:
        summary = dict((rank.status or {}).get("summary", {}))
        roles.append(
            {
                "rank": rank.rank,
                "coords": spec.layout.coords(rank.rank),
                "ranks": [rank.rank],
                "collectives": summary.pop("collectives", 0),
                "collective_bytes": summary.pop("collective_bytes", 0),
                "unknown_bytes": 0,
                "assumed": 0,
                "summary": summary,
            }
        )
    doc = {
        "layout": spec.layout.to_json(),
        "label": spec.label(),
        "world_size": spec.layout.world_size,
        "fsdp": spec.fsdp,
        "layers": None,
        "real_ranks": True,
        "roles": roles,
        "notes": [],
    }
    atomic_write_json(job_dir / ROLES_FILE, doc)


def supervisor_deadline(timeout_s: float) -> float:
    """When the supervisor's timeout ends this job, on :func:`time.monotonic`'s clock.

    The supervisor counts from the moment it started this worker; what the worker did before
    the launch (its imports, when it was not forked from a preloaded server) counts too, so
    the deadline is taken from this process's own start (no later than the supervisor's).
    """
    return time.monotonic() - _seconds_since_start() + timeout_s


def _seconds_since_start() -> float:
    """Since this process started: its start in /proc (clock ticks since boot) against the
    boot-time clock, which /proc counts on. 0 where /proc does not say."""
    try:
        stat = Path("/proc/self/stat").read_text()
        # Field 22, counted after the command name (in parentheses, which may hold spaces).
        ticks = int(stat[stat.rindex(")") + 2 :].split()[19])
        now = time.clock_gettime(time.CLOCK_BOOTTIME)
        return max(0.0, now - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError, AttributeError):
        return 0.0


def _watch(ranks: list[_Rank], job_deadline: float) -> bool:
    """Wait for every rank; at the first bad end, ask the others what they are doing, give
    them a short grace, then kill them. True when the job's deadline (the supervisor's) came
    near first: every rank asked, then killed."""
    deadline: float | None = None
    while True:
        now = time.monotonic()
        running = [r for r in ranks if r.proc.poll() is None]
        if running and deadline is None and now > job_deadline - DEADLINE_MARGIN_S:
            _ask(running, until=job_deadline - STATUS_RESERVE_S)
            for rank in running:
                rank.doing = _doing(rank.dir, rank.asked_phase)
                rank.killed_by_us = True
                with contextlib.suppress(ProcessLookupError):
                    rank.proc.kill()
            for rank in running:
                rank.proc.wait()
            return True
        for rank in ranks:
            if rank.ended_at is None and rank.proc.returncode is not None:
                rank.ended_at = now
                rank.status = _read_status(rank.dir)
                if deadline is None and not rank.ok:
                    _ask(
                        running,
                        until=min(
                            time.monotonic() + ANSWER_WAIT_S, job_deadline - STATUS_RESERVE_S
                        ),
                    )
                    for other in running:
                        other.doing = _doing(other.dir, other.asked_phase)
                    deadline = time.monotonic() + SURVIVOR_GRACE_S
        if not running:
            return False
        if deadline is not None and time.monotonic() > deadline:
            for rank in running:
                rank.killed_by_us = True
                with contextlib.suppress(ProcessLookupError):
                    rank.proc.kill()
            for rank in running:
                rank.proc.wait()
            deadline = None  # every rank has ended now; the loop records their ends
            continue
        time.sleep(POLL_S)


def _ask(running: list[_Rank], until: float) -> None:
    """Ask each live rank for its Python stacks (SIGUSR1, faulthandler) and its flight
    recorder (SIGUSR2, its recorder thread), and wait until every rank has answered both, has
    ended, or ``until``. An answer is a file written after the ask (the stacks complete: their
    size grew, then held for a poll): a fixed wait would be too short on a loaded machine,
    where a signalled rank runs late."""
    asked = {r.rank: _answers(r.dir) for r in running}
    last = dict(asked)
    for rank in running:  # the phase it was in when asked: the answers are of that moment
        rank.asked_phase = current_phase(rank.dir / RANK_PHASES)
    for rank in running:
        for sig in (signal.SIGUSR1, flightrec.DUMP_SIGNAL):
            with contextlib.suppress(ProcessLookupError):
                os.kill(rank.proc.pid, sig)

    def waiting(rank: _Rank) -> bool:
        now = _answers(rank.dir)
        stacks, recorder = now
        grew = stacks > asked[rank.rank][0] and stacks == last[rank.rank][0]
        last[rank.rank] = now
        answered = grew and recorder != asked[rank.rank][1]
        return not answered and rank.proc.poll() is None

    while time.monotonic() < until and any([waiting(r) for r in running]):
        time.sleep(POLL_S)


def _answers(rank_dir: Path) -> tuple[int, int | None]:
    """What a rank has answered so far: its stacks file's size (faulthandler appends to it)
    and when its flight recorder dump was last written."""
    try:
        stacks = (rank_dir / STACKS).stat().st_size
    except OSError:
        stacks = 0
    return stacks, _mtime(rank_dir / flightrec.FR_JSON)


def _mtime(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None


def _doing(rank_dir: Path, asked_phase: str | None = None) -> str | None:
    """What a live rank was doing: its phase and the torch.distributed call it was in (its
    stack), and the collective its flight recorder shows it blocked in."""
    # The phase at the ask: a rank may leave it while it answers (its collective failing).
    phase = asked_phase or current_phase(rank_dir / RANK_PHASES)
    where = collective_in(rank_dir / STACKS)
    parts = [f"in phase {phase}"] if phase else []
    if where:
        parts.append(f"waiting in {where}")
    found = _recorded(rank_dir, failed=False)
    if found is not None:
        parts.append(flightrec.describe(found))
    return ", ".join(parts) or None


def _recorded(rank_dir: Path, failed: bool) -> dict[str, Any] | None:
    doc = flightrec.read(rank_dir)
    return flightrec.in_flight(doc, failed) if doc is not None else None


def current_phase(path: Path) -> str | None:
    """The innermost phase a rank's phase log started and did not end."""
    open_phases: list[str] = []
    with contextlib.suppress(OSError):
        for line in path.read_text(errors="replace").splitlines():
            m = re.match(r"\d+ \d+ \[[^\]]*\] \[(?P<phase>[^\]]*)\] (?P<et>Start|End)$", line)
            if m is None:
                continue
            if m["et"] == "Start":
                open_phases.append(m["phase"])
            elif m["phase"] in open_phases:
                open_phases.remove(m["phase"])
    return open_phases[-1] if open_phases else None


def collective_in(path: Path) -> str | None:
    """The innermost torch.distributed frame of a faulthandler dump (most recent call first),
    with its nearest distributed caller of another name: the collective a rank was blocked
    in, e.g. ``all_reduce (distributed_c10d.py:3012)`` or ``wait_tensor, from
    redistribute_local_tensor (_functional_collectives.py:142)`` (a DTensor's collective)."""
    frames: list[re.Match[str]] = []
    with contextlib.suppress(OSError):
        for line in path.read_text(errors="replace").splitlines():
            if line.startswith(("Thread ", "Current thread ")) and frames:
                break  # the first thread listed is the one the signal interrupted: ours
            m = _FRAME.search(line)
            if m is not None and "torch/distributed" in m["file"]:
                frames.append(m)
    if not frames:
        return None
    first = frames[0]
    caller = next(
        (
            m["func"]
            for m in frames[1:]
            if m["func"] != first["func"] and m["func"] not in _GENERIC_FUNCS
        ),
        None,
    )
    via = f", from {caller}" if caller and first["func"] in ("wait_tensor", "wait") else ""
    return f"{first['func']}{via} ({Path(first['file']).name}:{first['line']})"


def _read_status(rank_dir: Path) -> dict[str, Any] | None:
    try:
        data = orjson.loads((rank_dir / RANK_STATUS).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def _how(rank: _Rank) -> str:
    """One rank's end in a few words."""
    status = rank.status
    if status is not None and status.get("status") == "ok":
        return "ok"
    if rank.killed_by_us:
        return f"killed by the launcher after the failure ({rank.doing or 'doing nothing known'})"
    if status is not None:
        error = status.get("error") or {}
        phase, call = status.get("phase"), status.get("collective")
        where = ", ".join(([f"in {call}"] if call else []) + ([f"during {phase}"] if phase else []))
        where = f" ({where})" if where else ""
        cause = str(error.get("root_cause", "no reason"))
        if len(cause) > CAUSE_CHARS:
            cause = cause[:CAUSE_CHARS].rstrip() + "..."
        found = _flight(rank)
        recorded = f", {flightrec.describe(found)}" if found is not None else ""
        return f"{status.get('status')}: {cause}{where}{recorded}"
    phase = current_phase(rank.dir / RANK_PHASES)
    return describe_exit(rank.proc.returncode) + (f" during {phase}" if phase else "")


def _flight(rank: _Rank) -> dict[str, Any] | None:
    """The collective the rank's flight recorder shows it in (blocked, or failed in when its
    own error came from a collective), read once."""
    if "flight" not in rank.extra:
        failed = bool((rank.status or {}).get("collective"))
        rank.extra["flight"] = _recorded(rank.dir, failed)
    found: dict[str, Any] | None = rank.extra["flight"]
    return found


def _flights(ranks: list[_Rank]) -> dict[str, dict[str, Any]]:
    return {str(r.rank): f for r in ranks if (f := _flight(r)) is not None}


def _timeout(ranks: list[_Rank], timeout_s: float) -> RanksFailed:
    line = f"no result after {timeout_s:g} s: " + "; ".join(
        f"rank {r.rank}: {r.doing or 'nothing known'}"
        if r.killed_by_us
        else f"rank {r.rank}: {_how(r)}"
        for r in ranks
    )
    error = ErrorInfo(type="RankTimeout", message=line, root_cause=line)
    extra = {
        "ranks": {str(r.rank): r.doing if r.killed_by_us else _how(r) for r in ranks},
        "flight_recorder": _flights(ranks),
    }
    for key, value in extra.items():
        setattr(error, key, value)
    return RanksFailed(JobStatus.TIMEOUT, error)


def _end_and_doing(rank: _Rank) -> str:
    how = _how(rank)
    if rank.doing and not rank.killed_by_us:
        how += f" (when the failure was seen: {rank.doing})"
    return how


def _peer_lost(rank: _Rank) -> bool:
    error = (rank.status or {}).get("error") or {}
    return bool(PEER_LOST.search(str(error.get("root_cause", ""))))


def _failure(ranks: list[_Rank], bad: list[_Rank]) -> RanksFailed:
    # First to fail: the earliest seen ending badly; in one poll round, a rank that left no
    # status (killed) before one that wrote its own error (often its peer's loss).
    first = min(
        (r for r in bad if not r.killed_by_us),
        key=lambda r: (_peer_lost(r), r.ended_at or float("inf"), r.status is not None, r.rank),
        default=bad[0],
    )
    status = JobStatus.FAILED
    if first.status is not None:
        with contextlib.suppress(ValueError):
            status = JobStatus(str(first.status.get("status")))
    if status == JobStatus.OK:
        status = JobStatus.FAILED
    others = [f"rank {r.rank}: {_end_and_doing(r)}" for r in ranks if r is not first]
    line = f"rank {first.rank} failed first: {_how(first)}"
    if others:
        line += "; " + "; ".join(others)
    error = ErrorInfo(
        type="RankFailure",
        message=line,
        root_cause=line,
    )
    error_extra: dict[str, Any] = {
        "rank": first.rank,
        # The phase is the first failing rank's; the line says every rank's, so the job's
        # reason gets no "(during ...)" of one of them.
        "rank_phase": (first.status or {}).get("phase") or current_phase(first.dir / RANK_PHASES),
        "ranks": {str(r.rank): _end_and_doing(r) for r in ranks},
        "doing": {str(r.rank): r.doing for r in ranks if r.doing},
        # Per rank, the collective its flight recorder shows it in: name, seq, group, sizes.
        "flight_recorder": _flights(ranks),
    }
    for key, value in error_extra.items():
        setattr(error, key, value)
    return RanksFailed(status, error)
