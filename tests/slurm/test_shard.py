"""Shards: a partition of the jobs, by model, stable under reruns and config reordering."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from kerneltracer.config import RunConfig
from kerneltracer.core.jobspec import JobSpec
from kerneltracer.core.layout import RunPaths
from kerneltracer.errors import RunDirLockedError, UsageError
from kerneltracer.orchestrator.expand import plan_jobs
from kerneltracer.orchestrator.lock import RunDirLock
from kerneltracer.orchestrator.shard import Shard, parse_shard, select_shard, split_jobs


def _jobs(models: list[dict[str, object]], tmp_path: Path) -> list[JobSpec]:
    cfg = RunConfig.model_validate(
        {"defaults": {"tracers": ["torch_dispatch", "torch_profiler"]}, "models": models}
    )
    return plan_jobs(cfg, tmp_path)


def _models(n: int) -> list[dict[str, object]]:
    out: list[dict[str, object]] = [{"id": f"org/model-{i}"} for i in range(n)]
    # The same model twice (eval and train): one model, so one shard.
    out.append({"id": "org/model-0", "mode": "train", "name": "model-0-train"})
    out.append({"path": "local/dir-a"})
    return out


def _assignment(jobs: list[JobSpec], count: int) -> dict[str, int]:
    return {j.key: i for i in range(1, count + 1) for j in select_shard(jobs, Shard(i, count))}


@pytest.mark.parametrize("count", [1, 2, 3, 5, 8, 40])
def test_shards_partition_the_jobs_and_keep_models_together(tmp_path: Path, count: int) -> None:
    jobs = _jobs(_models(23), tmp_path)
    seen: list[str] = []
    for i in range(1, count + 1):
        part = select_shard(jobs, Shard(i, count))
        seen += [j.key for j in part]
        assert [j.key for j in part] == [j.key for j in jobs if j in part]  # config order kept
    assert sorted(seen) == sorted(j.key for j in jobs)  # every job exactly once
    assert len(seen) == len(set(seen))
    owner = _assignment(jobs, count)
    by_model: dict[str, set[int]] = {}
    for job in jobs:
        by_model.setdefault(job.model.slug, set()).add(owner[job.key])
    assert all(len(shards) == 1 for shards in by_model.values())
    sizes = [len({j.model.slug for j in part}) for part in split_jobs(jobs, count).values()]
    assert max(sizes) - min(sizes) <= 1  # balanced to within one model


def test_assignment_is_stable_under_reordering_and_reruns(tmp_path: Path) -> None:
    models = _models(17)
    expected = _assignment(_jobs(models, tmp_path), 4)
    rng = random.Random(7)
    for _ in range(5):
        shuffled = models[:]
        rng.shuffle(shuffled)
        assert _assignment(_jobs(shuffled, tmp_path), 4) == expected
    assert select_shard(_jobs(models, tmp_path), None) == _jobs(models, tmp_path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0/3", "I must be between 1 and 3"),
        ("4/3", "I must be between 1 and 3"),
        ("1/0", "N must be between 1"),
        ("2", "expected I/N"),
        ("a/b", "expected I/N"),
        ("-1/3", "expected I/N"),
    ],
)
def test_bad_shard_is_one_clear_line(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_shard(text)
    assert parse_shard(" 2 / 3 ") == Shard(2, 3)


def test_shards_lock_and_record_separately(tmp_path: Path) -> None:
    one, two = Shard(1, 2), Shard(2, 2)
    run = RunPaths(tmp_path)
    assert len({run.manifest(None), run.manifest(one.tag), run.manifest(two.tag)}) == 3
    with (
        RunDirLock(run.lock(one.tag)),
        RunDirLock(run.lock(two.tag)),
        pytest.raises(RunDirLockedError),
    ):
        RunDirLock(run.lock(one.tag)).acquire()
