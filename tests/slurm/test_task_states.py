"""Task states merged from squeue, sacct, scontrol and the job-completion log (parsing only;
tests/slurm/test_real_slurm.py runs the real commands)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kerneltracer.slurm import cluster


def test_states_fall_back_to_scontrol_and_jobcomp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jobcomp = tmp_path / "jobcomp.log"
    jobcomp.write_text(
        "JobId=8 UserId=root(0) Name=kt JobState=CANCELLED ArrayJobId=7 ArrayTaskId=1 "
        "DerivedExitCode=0:0 ExitCode=0:15\n"
        "JobId=9 UserId=root(0) Name=kt JobState=COMPLETED ArrayJobId=7 ArrayTaskId=2 "
        "ExitCode=0:0\n"
        "JobId=4 UserId=root(0) Name=other JobState=FAILED ArrayJobId=3 ArrayTaskId=1\n"
        "JobId=10 Name=kt JobState=FAILED ArrayJobId=7 ArrayTaskId=3 ExitCode=1:0\n"
    )
    outputs = {
        "scontrol show config": (
            f"JobCompType             = jobcomp/filetxt\nJobCompLoc = {jobcomp}\n"
        ),
        # scontrol still knows task 3 (requeued and running again) and the pending range.
        "scontrol -o show job 7": (
            "JobId=10 ArrayJobId=7 ArrayTaskId=3 JobState=RUNNING Reason=None\n"
            "JobId=7 ArrayJobId=7 ArrayTaskId=4-5 JobState=PENDING Reason=Resources\n"
        ),
        "squeue -h -r -j 7 -o %F|%K|%T|%B|%r": (
            "7|4|PENDING|(null)|Resources\n7|5|PENDING|(null)|Resources\n"
        ),
    }

    def fake_run(argv: list[str], timeout: float = 0) -> subprocess.CompletedProcess[str]:
        if argv[0] == "sacct":
            return subprocess.CompletedProcess(argv, 1, "", "accounting storage is disabled")
        return subprocess.CompletedProcess(argv, 0, outputs[" ".join(argv)], "")

    monkeypatch.setattr(cluster, "run_slurm", fake_run)
    states = cluster.task_states(["7"])
    got = {task: (s.state, s.source) for (job, task), s in states.items() if job == "7"}
    assert got == {
        1: ("CANCELLED", "jobcomp"),
        2: ("COMPLETED", "jobcomp"),
        3: ("RUNNING", "scontrol"),
        4: ("PENDING", "squeue"),
        5: ("PENDING", "squeue"),
    }
    assert ("3", 1) not in states  # another array's line in the log
    assert states[("7", 1)].exit_code == "0:15"


def test_a_task_requeued_after_its_node_failed_keeps_that_end_and_the_node(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Slurm requeues a lost node's tasks: the live task alone no longer says where or how
    its last run ended, the job-completion log does."""
    jobcomp = tmp_path / "jobcomp.log"
    jobcomp.write_text(
        "JobId=18 Name=kt JobState=NODE_FAIL NodeList=kt-n2 ArrayJobId=15 ArrayTaskId=3\n"
        "JobId=19 Name=kt JobState=NODE_FAIL NodeList=kt-n2 ArrayJobId=15 ArrayTaskId=4\n"
    )
    outputs = {
        "scontrol show config": f"JobCompType = jobcomp/filetxt\nJobCompLoc = {jobcomp}\n",
        "scontrol -o show job 15": (
            "JobId=18 ArrayJobId=15 ArrayTaskId=3 JobState=PENDING Reason=BeginTime "
            "NodeList=(null) BatchHost=\n"
            "JobId=16 ArrayJobId=15 ArrayTaskId=1 JobState=RUNNING Reason=None "
            "NodeList=kt-n1 BatchHost=kt-n1\n"
        ),
        "squeue -h -r -j 15 -o %F|%K|%T|%B|%r": (
            "15|3|PENDING|(null)|BeginTime\n15|1|RUNNING|kt-n1|None\n"
        ),
    }

    def fake_run(argv: list[str], timeout: float = 0) -> subprocess.CompletedProcess[str]:
        if argv[0] == "sacct":
            return subprocess.CompletedProcess(argv, 1, "", "accounting storage is disabled")
        return subprocess.CompletedProcess(argv, 0, outputs[" ".join(argv)], "")

    monkeypatch.setattr(cluster, "run_slurm", fake_run)
    states = cluster.task_states(["15"])
    requeued, running, failed = states[("15", 3)], states[("15", 1)], states[("15", 4)]
    assert (requeued.state, requeued.node, requeued.previous) == (
        "PENDING",
        "",
        "NODE_FAIL on kt-n2",
    )
    assert (running.state, running.node, running.previous) == ("RUNNING", "kt-n1", "")
    assert (failed.state, failed.ended_on) == ("NODE_FAIL", "NODE_FAIL on kt-n2")
