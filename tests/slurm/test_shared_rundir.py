"""What shards on several hosts share in one run dir, without a cluster: the liveness a reader
on any host gets from a shard's lock, and results.json merged across shards."""

from __future__ import annotations

import json
from pathlib import Path

from kerneltracer.core.layout import RunPaths
from kerneltracer.orchestrator.lock import RunDirLock
from kerneltracer.orchestrator.models import resolve_models
from kerneltracer.report.collect import collect_run
from tests.report.runs import make_run


def _shard_run(run_dir: Path, host: str) -> Path:
    """An open manifest of shard 2/3 whose orchestrator ran on another host (its pid means
    nothing here)."""
    make_run(run_dir, {"m/torch_dispatch": None}, finished=False)
    manifest = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").unlink()
    manifest.update(shard="2/3", orchestrator={"pid": 1, "host": host})
    RunPaths(run_dir).manifest("shard-2-of-3").write_text(json.dumps(manifest))
    return run_dir


def test_a_shard_on_another_host_is_running_exactly_while_its_lock_is_held(
    tmp_path: Path,
) -> None:
    run_dir = _shard_run(tmp_path / "run", "some-other-node")
    lock = RunDirLock(RunPaths(run_dir).lock("shard-2-of-3"))
    lock.acquire()
    try:
        data = collect_run(run_dir)
        assert (data.in_progress, data.abandoned) == (True, False)
    finally:
        lock.release()
    # The node was lost: its lock is free, so it is known gone from here.
    data = collect_run(run_dir)
    assert (data.in_progress, data.abandoned) == (False, True)


def test_a_reader_probing_the_lock_never_makes_a_starting_run_fail(tmp_path: Path) -> None:
    from kerneltracer.core.runlock import lock_held

    lock = RunDirLock(RunPaths(tmp_path).lock())
    lock.acquire()
    assert lock_held(lock.path) is True
    lock.release()
    assert lock_held(lock.path) is False
    again = RunDirLock(RunPaths(tmp_path).lock())
    again.acquire()  # the probe's shared lock is gone: nothing blocks
    again.release()


def test_results_json_keeps_every_shards_models(
    tmp_path: Path, tiny_models: dict[str, Path]
) -> None:
    from kerneltracer.orchestrator.expand import plan_jobs
    from kerneltracer.orchestrator.planning import load_config
    from kerneltracer.orchestrator.shard import split_jobs
    from tests.helpers import write_config

    config = write_config(
        tmp_path / "c.yaml",
        [{"path": str(tiny_models[n])} for n in ("tiny-llama", "tiny-gpt2")],
        defaults={"tracers": ["torch_dispatch"]},
    )
    cfg, base = load_config(config)
    log_dir = tmp_path / "downloads"
    for jobs in split_jobs(plan_jobs(cfg, base), 2).values():  # each shard resolves its own
        resolve_models(jobs, log_dir=log_dir)
    results = json.loads((log_dir / "results.json").read_text())
    assert sorted(r["slug"] for r in results) == ["tiny-gpt2", "tiny-llama"]
    assert all(r["host"] for r in results)
