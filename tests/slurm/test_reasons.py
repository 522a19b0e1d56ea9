"""Pending reasons judged stuck or waiting, and how status reports them (no cluster: faked
Slurm answers; tests/slurm/test_real_limits.py holds a real task in PartitionConfig)."""

from __future__ import annotations

import subprocess

import pytest

from kerneltracer.slurm import cluster
from kerneltracer.slurm.reasons import _hostlist, judge
from kerneltracer.slurm.status import ShardReport, _judge_pending

NODES = {"node01", "node02", "gpu1"}


@pytest.mark.parametrize(
    "reason",
    [
        "PartitionConfig",
        "PartitionTimeLimit",
        "DependencyNeverSatisfied",
        "JobHeldUser",
        "AssocMaxCpuPerJobLimit",
        "QOSMaxWallDurationPerJobLimit",
        "ReqNodeNotAvail, UnavailableNodes:node[02-03]",  # node03 does not exist
    ],
)
def test_reasons_that_never_clear(reason: str) -> None:
    verdict = judge(reason, NODES, user_running=True)
    assert verdict.stuck and verdict.why, reason


@pytest.mark.parametrize(
    "reason",
    [
        "None",
        "Priority",
        "Resources",
        "Dependency",
        "JobArrayTaskLimit",
        "ReqNodeNotAvail, UnavailableNodes:node[01-02]",  # exist, only down or reserved
        "ReqNodeNotAvail, Reserved for maintenance",
        "Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority "
        "partitions",
        "AssocMaxJobsLimit",  # the user's running jobs free slots as they end
    ],
)
def test_reasons_that_clear_by_themselves(reason: str) -> None:
    assert not judge(reason, NODES, user_running=True).stuck, reason


def test_job_count_limit_is_stuck_only_with_nothing_running() -> None:
    assert judge("AssocMaxJobsLimit", NODES, user_running=False).stuck
    assert not judge("ReqNodeNotAvail, UnavailableNodes:node09", None, False).stuck  # no sinfo


def test_hostlists_expand() -> None:
    assert _hostlist("node[1-3,07],gpu01") == ["node1", "node2", "node3", "node07", "gpu01"]
    assert _hostlist("n[08-10]") == ["n08", "n09", "n10"]


def _report(shard: int, state: str, reason: str, incomplete: bool = True) -> ShardReport:
    return ShardReport(shard, "7", state, reason, 1, incomplete=["m/t"] if incomplete else [])


def test_status_marks_stuck_tasks_and_their_problems(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []

    def fake_run(argv: list[str], timeout: float = 0) -> subprocess.CompletedProcess[str]:
        asked.append(argv[0])
        return subprocess.CompletedProcess(argv, 0, "", "")  # no job of the user is running

    monkeypatch.setattr(cluster, "run_slurm", fake_run)
    reports = [
        _report(1, "PENDING", "PartitionConfig"),
        _report(2, "PENDING", "Priority"),
        _report(3, "PENDING", "AssocMaxJobsLimit"),
        _report(4, "FAILED", "1:0"),
        _report(5, "COMPLETED", "0:0", incomplete=False),
    ]
    _judge_pending(reports)
    assert asked == ["squeue"]  # only the job-count limit needed to ask
    assert [bool(r.stuck) for r in reports] == [True, False, True, False, False]
    assert [r.live for r in reports] == [False, True, False, False, False]
    assert reports[0].problem == (
        "PENDING (PartitionConfig) never starts by itself: the request exceeds what the "
        "partition's nodes offer"
    )
    assert reports[1].problem == ""
    assert reports[3].problem == "FAILED (1:0), 1 of 1 job(s) incomplete: m/t"
    assert reports[4].problem == ""


def test_task_waiting_on_a_stuck_download_is_stuck(monkeypatch: pytest.MonkeyPatch) -> None:
    answers = {"squeue -h -j 6 -o %T|%r": "PENDING|PartitionConfig\n"}

    def fake_run(argv: list[str], timeout: float = 0) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(argv, 0, answers.get(" ".join(argv), ""), "")

    monkeypatch.setattr(cluster, "run_slurm", fake_run)
    reports = [_report(1, "PENDING", "Dependency")]
    _judge_pending(reports, "6")
    assert reports[0].stuck == (
        "download job 6 is PENDING (PartitionConfig): the request exceeds what the partition's "
        "nodes offer"
    )
    answers["squeue -h -j 6 -o %T|%r"] = "RUNNING|None\n"
    reports = [_report(1, "PENDING", "Dependency")]
    _judge_pending(reports, "6")
    assert reports[0].stuck == "" and reports[0].live
