"""Scheduling of multi-rank jobs: one `-j` slot per rank (a job wider than `-j` runs alone),
one GPU per rank, and a job this machine can never run refused in one line before it starts.

The scheduling loop runs for real; only starting and watching a worker are replaced (a
worker here "runs" for a few polls), so what is tested is who starts next and with what."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from kerneltracer.core.jobspec import JobSpec, ModelRef
from kerneltracer.core.status import JobStatus, base_status, now_iso
from kerneltracer.orchestrator import environment as envmod
from kerneltracer.orchestrator import runner
from kerneltracer.orchestrator.planner import plan_run


def _job(name: str, parallel: dict[str, int] | None, device: str = "cpu", **kw: Any) -> JobSpec:
    return JobSpec(
        key=f"{name}/torch_dispatch",
        model=ModelRef(display=name, slug=name, path=f"/{name}", weights=kw.get("weights", "real")),
        tracer="torch_dispatch",
        tracer_version="1",
        exclusive_group=None,
        framework="huggingface",
        mode="eval",
        device=device,
        dtype="auto",
        batch_size=1,
        seq_len=8,
        options={},
        timeout_s=60,
        max_rss_gb=None,
        parallel=parallel,
    )


class _Fake:
    """Stands for starting and watching workers: records who ran with whom, on which GPUs."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.running: dict[str, int] = {}  # key -> polls left
        self.started: list[tuple[str, list[str], int, set[str]]] = []
        monkeypatch.setattr(runner, "_start", self.start)
        monkeypatch.setattr(runner, "_check", self.check)
        monkeypatch.setattr(runner, "_finish", self.finish)

    def start(
        self, chain: Any, member: Any, options: Any, threads: int, gpus: list[str], *_: Any
    ) -> runner._Active:
        key = member.job.key
        self.started.append((key, list(gpus), threads, set(self.running)))
        self.running[key] = 3
        return runner._Active(member, chain, None, "a", now_iso(), gpus)  # type: ignore[arg-type]

    def check(self, act: Any, options: Any) -> int | None:
        key = act.planned.job.key
        self.running[key] -= 1
        return 0 if self.running[key] <= 0 else None

    def finish(self, act: Any, options: Any, stop: Any) -> Any:
        del self.running[act.planned.job.key]
        return base_status(act.planned.job, uuid.uuid4().hex, JobStatus.OK)


def _run(tmp_path: Path, jobs: list[JobSpec], **options: Any) -> dict[str, Any]:
    opts = runner.RunOptions(preload=False, poll_s=0.001, **options)
    return runner.execute(plan_run(tmp_path / "run", jobs), opts).statuses


def test_a_multi_rank_job_takes_one_slot_per_rank(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # no GPU: every job on CPU
    monkeypatch.setattr(runner.os, "cpu_count", lambda: 4)
    fake = _Fake(monkeypatch)
    jobs = [_job("a", None), _job("tp", {"tp": 2}), _job("b", None), _job("c", None)]
    statuses = _run(tmp_path, jobs, max_parallel=3)
    assert {s.status for s in statuses.values()} == {JobStatus.OK}
    alongside = {key: others for key, _, _, others in fake.started}
    # 3 slots: the TP 2 job (2 slots) starts next to at most one single job, never two.
    assert len(alongside["tp/torch_dispatch"]) <= 1
    assert all(
        "tp/torch_dispatch" not in others or len(others) <= 1 for others in alongside.values()
    )
    threads = {key: t for key, _, t, _ in fake.started}
    # 4 cores over 3 slots: 1 thread per slot, each rank of the TP 2 job its slot's thread.
    assert threads["tp/torch_dispatch"] == 1 and threads["a/torch_dispatch"] == 1


def test_a_job_wider_than_j_runs_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    monkeypatch.setattr(runner.os, "cpu_count", lambda: 4)
    fake = _Fake(monkeypatch)
    jobs = [_job("a", None), _job("tp", {"tp": 4}), _job("b", None)]
    statuses = _run(tmp_path, jobs, max_parallel=2)
    assert {s.status for s in statuses.values()} == {JobStatus.OK}
    for key, _, threads, others in fake.started:
        if key == "tp/torch_dispatch":
            assert others == set() and threads == 1  # 4 cores over 2 slots, 4 ranks
        else:
            assert "tp/torch_dispatch" not in others
    # The fake simulation is one process: a weights-fake layout takes one slot.
    assert _job("f", {"tp": 8}, weights="fake").rank_processes == 1


def test_a_multi_rank_job_gets_one_gpu_per_rank(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5,6")
    fake = _Fake(monkeypatch)
    jobs = [_job("tp", {"tp": 2}, "auto"), _job("one", None, "auto"), _job("two", None, "auto")]
    statuses = _run(tmp_path, jobs, max_parallel=4)
    assert {s.status for s in statuses.values()} == {JobStatus.OK}
    gpus = {key: g for key, g, _, _ in fake.started}
    assert gpus["tp/torch_dispatch"] == ["4", "5"]
    assert len(gpus["one/torch_dispatch"]) == 1 and len(gpus["two/torch_dispatch"]) == 1
    # Never two jobs on one GPU: "two" waited for a GPU the others freed.
    started = {key: others for key, _, _, others in fake.started}
    assert len(started["two/torch_dispatch"]) <= 1
    pinned = _job("p", {"tp": 2}, "cuda:1")
    assert envmod.pick_gpus(pinned, ["4", "5", "6"], ["4", "5", "6"]) == ["5", "6"]
    assert envmod.pick_gpus(pinned, ["4", "5", "6"], ["4", "5"]) is None  # 6 busy: it waits


def test_a_job_needing_more_than_the_machine_has_is_refused_before_it_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    monkeypatch.setattr(runner.os, "cpu_count", lambda: 2)
    fake = _Fake(monkeypatch)
    gpu4 = _job("gpu4", {"tp": 4}, "auto")
    cpu4 = _job("cpu4", {"tp": 2, "dp": 2}, "cpu")
    fits = _job("fits", {"tp": 2}, "cuda")
    statuses = _run(tmp_path, [gpu4, cpu4, fits], max_parallel=1)
    assert [key for key, *_ in fake.started] == [fits.key]
    gpu, cpu = statuses[gpu4.key], statuses[cpu4.key]
    assert gpu.status == cpu.status == JobStatus.UNSUPPORTED
    assert gpu.reason == (
        "parallel tp4 needs 4 GPUs (one per rank) from auto, 2 visible "
        "(CUDA_VISIBLE_DEVICES or nvidia-smi); device: cpu runs the ranks on gloo"
    )
    assert cpu.reason is not None and cpu.reason.startswith("parallel ")
    assert cpu.reason.endswith("needs 4 CPU cores (one per rank), this machine has 2")
    assert "\n" not in gpu.reason + cpu.reason
    # Written like any status: the next run sees an unsupported job, not a missing one.
    assert (tmp_path / "run").is_dir()


def test_a_layout_the_model_cannot_take_is_refused_for_the_model_before_the_machine(
    tmp_path: Path,
) -> None:
    """TP 3 of 4 heads on a 2-core machine: no machine could run it, and that is what is said
    (the core count is the reason only for a layout the model takes)."""
    import json

    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text(
        json.dumps({"num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2})
    )
    ref = ModelRef(display="m", slug="m", path="m", local_dir=str(model))

    def job(parallel: dict[str, int]) -> JobSpec:
        return _job("m", parallel).model_copy(update={"model": ref})

    reason = envmod.refusal(job({"tp": 3}), [], cpus=2)
    assert reason is not None and reason.startswith(
        "parallel.tp 3 does not divide the model's 4 attention heads"
    ), reason
    # A layout the model takes: the machine's reason.
    assert envmod.refusal(job({"tp": 2, "dp": 2}), [], cpus=2) == (
        "parallel tp2.dp2 needs 4 CPU cores (one per rank), this machine has 2"
    )
    (model / "config.json").write_text("{not json")  # unreadable here: the worker says why
    assert envmod.refusal(job({"tp": 3}), [], cpus=2) == (
        "parallel tp3 needs 3 CPU cores (one per rank), this machine has 2"
    )


def test_a_layout_vllms_own_ranks_cannot_run_is_refused_for_vllm_first() -> None:
    """vLLM launches tp only: tp2.pp2 on a 2-core machine is refused for that, not the cores."""
    job = _job("v", {"tp": 2, "pp": 2}).model_copy(update={"framework": "vllm"})
    assert envmod.refusal(job, [], cpus=2) == (
        "vLLM ranks are launched for tp only (the engine's tensor_parallel_size); parallel "
        "with pp 2 is not (valid keys: tp)"
    )
