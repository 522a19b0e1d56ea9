"""The Slurm commands kerneltracer calls (argv lists, never a shell) and their parsing.

Task states come from the richest source that answers: squeue for live tasks, sacct when
accounting is on; otherwise ``scontrol show job`` (finished jobs for MinJobAge) and the
job-completion log file (``JobCompType=jobcomp/filetxt``), which keeps every finished task.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from kerneltracer.errors import SlurmError

_KV = re.compile(r"(\w+)=(\S*)")
_QUERY_TIMEOUT_S = 30
# Ends that take the task's node with them: Slurm requeues the task (by default) or ends it.
_ENDED_BY_NODE = frozenset({"NODE_FAIL", "BOOT_FAIL"})


@dataclass
class TaskState:
    job_id: str  # the array's job id
    task: int
    state: str  # PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT, ...
    reason: str = ""
    exit_code: str = ""
    source: str = ""
    node: str = ""  # the host the task runs or ran on ("" while pending)
    # How an earlier run of this same task ended when Slurm requeued it ("NODE_FAIL on
    # kt-n2"): what a pending or running task alone no longer says.
    previous: str = ""

    @property
    def ended_on(self) -> str:
        return f"{self.state} on {self.node}" if self.node else self.state


def run_slurm(
    argv: list[str], timeout: float = _QUERY_TIMEOUT_S
) -> subprocess.CompletedProcess[str]:
    if shutil.which(argv[0]) is None:
        raise SlurmError(f"`{argv[0]}` not found: is Slurm installed and on PATH?")
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise SlurmError(f"`{argv[0]}` did not answer within {timeout:g}s") from None


def sbatch(script: Path, args: Iterable[str] = ()) -> str:
    """Submit; returns the job id."""
    proc = run_slurm(["sbatch", "--parsable", *args, str(script)])
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise SlurmError(f"sbatch {script.name} failed: {last}")
    return proc.stdout.strip().split(";")[0]


def _squeue(job_id: str) -> list[TaskState]:
    # %F/%K are the array job and task ids (%a would be the account); %B the batch host.
    proc = run_slurm(["squeue", "-h", "-r", "-j", job_id, "-o", "%F|%K|%T|%B|%r"])
    if proc.returncode != 0:
        return []  # squeue refuses ids it no longer knows
    out = []
    for line in proc.stdout.splitlines():
        parts = line.strip().split("|", 4)
        if len(parts) == 5 and parts[1].isdigit():
            node = _node(parts[3])
            out.append(TaskState(job_id, int(parts[1]), parts[2], parts[4], "", "squeue", node))
    return out


def _sacct(job_id: str) -> list[TaskState]:
    proc = run_slurm(
        ["sacct", "-n", "-P", "-X", "-j", job_id, "-o", "JobID,State,ExitCode,NodeList"]
    )
    if proc.returncode != 0:
        return []  # accounting disabled
    out = []
    for line in proc.stdout.splitlines():
        parts = line.strip().split("|")
        if len(parts) != 4:
            continue
        array_id, _, task = parts[0].partition("_")
        if array_id == job_id and task.isdigit():
            state = parts[1].split()[0] if parts[1] else ""
            out.append(TaskState(job_id, int(task), state, "", parts[2], "sacct", _node(parts[3])))
    return out


def _from_fields(job_id: str, fields: dict[str, str], source: str) -> TaskState | None:
    if fields.get("ArrayJobId") != job_id or not fields.get("ArrayTaskId", "").isdigit():
        return None
    return TaskState(
        job_id,
        int(fields["ArrayTaskId"]),
        fields.get("JobState", ""),
        fields.get("Reason", ""),
        fields.get("ExitCode", ""),
        source,
        _node(fields.get("BatchHost", "") or fields.get("NodeList", "")),
    )


def _node(text: str) -> str:
    """A host from Slurm's node fields; they say "(null)", "None assigned" or nothing
    while a task has no node."""
    text = text.strip()
    return "" if not text or text.startswith("(") or " " in text else text


def _scontrol(job_id: str) -> list[TaskState]:
    proc = run_slurm(["scontrol", "-o", "show", "job", job_id])
    if proc.returncode != 0:
        return []  # purged after MinJobAge
    states = (
        _from_fields(job_id, dict(_KV.findall(line)), "scontrol")
        for line in proc.stdout.splitlines()
    )
    return [s for s in states if s is not None]


def _jobcomp_path() -> Path | None:
    """The job-completion log file, when the cluster keeps one (jobcomp/filetxt)."""
    proc = run_slurm(["scontrol", "show", "config"])
    conf = dict(re.findall(r"^(\w+)\s*=\s*(.*?)\s*$", proc.stdout, re.M))
    if conf.get("JobCompType") != "jobcomp/filetxt" or not conf.get("JobCompLoc"):
        return None
    return Path(conf["JobCompLoc"])


def _jobcomp(job_ids: set[str], path: Path | None) -> list[TaskState]:
    if path is None:
        return []
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        fields = dict(_KV.findall(line))
        job_id = fields.get("ArrayJobId", "")
        if job_id in job_ids:
            state = _from_fields(job_id, fields, "jobcomp")
            if state is not None:
                out.append(state)
    return out


def task_states(job_ids: list[str]) -> dict[tuple[str, int], TaskState]:
    """(array job id, task) → its latest known state; later sources override earlier ones."""
    states: dict[tuple[str, int], TaskState] = {}
    found: list[TaskState] = _jobcomp(set(job_ids), _jobcomp_path())
    for job_id in job_ids:
        found += _scontrol(job_id)
        found += _sacct(job_id)
        found += _squeue(job_id)
    for state in found:
        key = (state.job_id, state.task)
        earlier = states.get(key)
        if earlier is not None:
            state.node = state.node or (earlier.node if earlier.state == state.state else "")
            state.previous = state.previous or earlier.previous
            if earlier.state in _ENDED_BY_NODE and state.state != earlier.state:
                state.previous = earlier.ended_on  # requeued: that end is still news
        states[key] = state
    return states


def job_state(job_id: str) -> tuple[str, str]:
    """A plain (non-array) job's state and reason; UNKNOWN once Slurm has forgotten it."""
    proc = run_slurm(["squeue", "-h", "-j", job_id, "-o", "%T|%r"])
    if proc.returncode == 0 and proc.stdout.strip():
        state, _, reason = proc.stdout.strip().splitlines()[0].partition("|")
        return state, reason
    proc = run_slurm(["scontrol", "-o", "show", "job", job_id])
    fields = dict(_KV.findall(proc.stdout)) if proc.returncode == 0 else {}
    if fields.get("JobState"):
        return fields["JobState"], fields.get("Reason", "")
    path = _jobcomp_path()
    if path is not None:
        with suppress(OSError):
            for line in path.read_text(errors="replace").splitlines():
                fields = dict(_KV.findall(line))
                if fields.get("JobId") == job_id and fields.get("JobState"):
                    return fields["JobState"], ""
    return "UNKNOWN", ""


def user_has_running_jobs() -> bool:
    """Whether any job of this user runs now (one ending frees a slot under a job limit)."""
    proc = run_slurm(["squeue", "-h", "--me", "-t", "RUNNING,COMPLETING", "-o", "%i"])
    return proc.returncode != 0 or bool(proc.stdout.strip())  # unknown: assume it may clear


def scancel(job_id: str) -> None:
    run_slurm(["scancel", job_id])
