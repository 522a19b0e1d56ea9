"""Unit tests of planning: bypass decisions, exclusive groups, classification of exits."""

from __future__ import annotations

import os
import signal
import sys
import uuid
from pathlib import Path

import pytest

from kerneltracer.core.jobspec import JobSpec
from kerneltracer.core.layout import RunPaths
from kerneltracer.core.rootcause import last_exception_line
from kerneltracer.core.status import (
    JobStatus,
    base_status,
    describe_output,
    incomplete_reason,
    read_status,
    write_status,
)
from kerneltracer.core.stop import StopKind, StopReason
from kerneltracer.orchestrator.classify import classify_exit, fault_frame
from kerneltracer.orchestrator.expand import plan_jobs
from kerneltracer.orchestrator.planner import plan_run
from kerneltracer.orchestrator.planning import load_config
from kerneltracer.worker.failure import classify_exception


@pytest.fixture
def jobs(tmp_path: Path) -> list[JobSpec]:
    (tmp_path / "m").mkdir()
    (tmp_path / "c.yaml").write_text(
        "defaults: {tracers: [torch_dispatch, torch_profiler]}\nmodels:\n  - path: m\n"
    )
    cfg, base = load_config(tmp_path / "c.yaml")
    return plan_jobs(cfg, base)


def _complete(job: JobSpec, run_dir: Path) -> Path:
    job_dir = RunPaths(run_dir).job(job.key).dir
    job_dir.mkdir(parents=True)
    (job_dir / "out.txt").write_text("hello")
    status = base_status(
        job, uuid.uuid4().hex, JobStatus.OK, outputs=[describe_output(job_dir, "out.txt")]
    )
    write_status(job_dir, status)
    return job_dir


def test_complete_job_is_bypassed_and_damage_is_detected(
    jobs: list[JobSpec], tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    job = jobs[0]
    job_dir = _complete(job, run_dir)
    assert incomplete_reason(read_status(job_dir), job, job_dir) is None
    # Same size, same mtime, other content: only a full verification catches it (like git).
    out = job_dir / "out.txt"
    st = out.stat()
    out.write_text("HELLO")
    os.utime(out, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert incomplete_reason(read_status(job_dir), job, job_dir) is None
    assert (
        incomplete_reason(read_status(job_dir), job, job_dir, verify=True)
        == "output out.txt changed content"
    )
    os.utime(out, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    assert incomplete_reason(read_status(job_dir), job, job_dir) == "output out.txt changed content"
    out.unlink()
    assert incomplete_reason(read_status(job_dir), job, job_dir) == "output out.txt is missing"


def test_request_change_is_not_complete(jobs: list[JobSpec], tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    job_dir = _complete(jobs[0], run_dir)
    longer = jobs[0].model_copy(update={"seq_len": 64})
    assert incomplete_reason(read_status(job_dir), longer, job_dir) == "request changed (seq_len)"


@pytest.mark.parametrize("damage", [b"", b"{", b'{"schema_version": 2}', b"[]"])
def test_corrupt_status_is_treated_as_missing(
    jobs: list[JobSpec], tmp_path: Path, damage: bytes
) -> None:
    job_dir = _complete(jobs[0], tmp_path / "run")
    (job_dir / "_TRACE_STATUS.json").write_bytes(damage)
    assert read_status(job_dir) is None
    plan = plan_run(tmp_path / "run", jobs)
    assert [p.job.key for p in plan.to_run] == [j.key for j in jobs]


def test_directory_alone_is_not_complete(jobs: list[JobSpec], tmp_path: Path) -> None:
    RunPaths(tmp_path / "run").job(jobs[0].key).dir.mkdir(parents=True)
    plan = plan_run(tmp_path / "run", jobs)
    assert plan.jobs[0].run and plan.jobs[0].reason == "no valid status file"


def test_exclusive_group_satisfied_by_a_complete_member(
    jobs: list[JobSpec], tmp_path: Path
) -> None:
    grouped = [j.model_copy(update={"exclusive_group": "graph"}) for j in jobs]
    run_dir = tmp_path / "run"
    plan = plan_run(run_dir, grouped)
    assert len(plan.chains) == 1 and len(plan.chains[0].members) == 2  # alternatives run in turn
    _complete(grouped[1], run_dir)
    plan = plan_run(run_dir, grouped)
    assert plan.to_run == [] and plan.satisfied_by == {grouped[0].key: grouped[1].key}


def test_classify_exit_cases(tmp_path: Path) -> None:
    log = tmp_path / "worker.log"
    log.write_text(
        "loading\nTraceback (most recent call last):\n  File x\nRuntimeError: boom here\n"
    )
    assert classify_exit(1, None, log, "trace").reason == "RuntimeError: boom here"
    assert classify_exit(-signal.SIGSEGV, None, log, None).status == JobStatus.CRASHED
    killed = classify_exit(-signal.SIGKILL, None, log, "load")
    assert killed.status == JobStatus.OOM and "OOM killer" in killed.reason
    stop = StopReason(StopKind.TIMEOUT, "no result after 5 s")
    timeout = classify_exit(-signal.SIGTERM, stop, log, "trace")
    assert (timeout.status, timeout.reason) == (
        JobStatus.TIMEOUT,
        "no result after 5 s during trace",
    )
    interrupt = StopReason(StopKind.INTERRUPT, "got SIGINT")
    assert classify_exit(-15, interrupt, log, None).status == JobStatus.INTERRUPTED
    too_big = StopReason(StopKind.MEMORY, "too big")
    assert classify_exit(-9, too_big, log, None).status == JobStatus.OOM
    assert last_exception_line([]) is None


def test_fault_frame_prefers_the_crashing_threads_code() -> None:
    lib = f"/usr/lib/python{sys.version_info.major}.{sys.version_info.minor}"
    dump = [
        "Fatal Python error: Segmentation fault",
        "",
        "Thread 0x1 (most recent call first):",
        f'  File "{lib}/threading.py", line 331 in wait',
        "",
        "Current thread 0x2 (most recent call first):",
        f'  File "{lib}/ctypes/__init__.py", line 519 in string_at',
        '  File "/models/modeling_x.py", line 37 in forward',
        "",
    ]
    assert fault_frame(dump) == "/models/modeling_x.py:37 in forward"


def test_exception_classification() -> None:
    def chained() -> None:
        try:
            raise OSError("disk gone")
        except OSError as exc:
            raise RuntimeError("load failed") from exc

    try:
        chained()
    except RuntimeError as exc:
        status, info = classify_exception(exc, "load")
    assert status == JobStatus.FAILED
    assert info.root_cause == "OSError: disk gone" and info.type == "RuntimeError"
    assert classify_exception(MemoryError(), None)[0] == JobStatus.OOM
    alloc = RuntimeError(
        "[enforce fail at alloc_cpu.cpp:121] DefaultCPUAllocator: can't allocate memory"
    )
    assert classify_exception(alloc, None)[0] == JobStatus.OOM


def test_gpu_slots(jobs: list[JobSpec]) -> None:
    from kerneltracer.orchestrator.environment import needs_gpu, pick_gpus

    gpus = ["0", "1"]
    auto, pinned, beyond = (
        jobs[0].model_copy(update={"device": d}) for d in ("auto", "cuda:1", "cuda:7")
    )
    cpu = jobs[0].model_copy(update={"device": "cpu"})
    assert needs_gpu(auto, gpus) and needs_gpu(pinned, gpus)
    assert not needs_gpu(cpu, gpus) and not needs_gpu(auto, []) and not needs_gpu(beyond, gpus)
    assert pick_gpus(auto, gpus, ["1"]) == ["1"]
    assert pick_gpus(pinned, gpus, ["0", "1"]) == ["1"]
    assert pick_gpus(pinned, gpus, ["0"]) is None  # its GPU is busy: it waits, never shares
