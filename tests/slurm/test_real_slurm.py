"""Against a real single-node Slurm (scripts/slurm-up.sh): arrays complete, a cancelled task
is resubmitted alone and resumes, a task at its time limit leaves no half-written job."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from kerneltracer.core.status import read_status
from tests.helpers import kt, make_faulty_model, status_of, wait_until, write_config

pytestmark = pytest.mark.timeout(240)
ARRAY_TIMEOUT_S = 150


def _submit(config: Path, env: dict[str, str], submitted: list[str], *args: str) -> None:
    proc = kt("slurm", "submit", str(config), *args, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    record = _record(config.parent / "run")
    submitted += [record["download_job"], record["arrays"][-1]["job_id"]]


def _record(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "slurm" / "submission.json").read_text())


def _live(job_ids: list[str]) -> bool:
    proc = subprocess.run(
        ["squeue", "-h", "-j", ",".join(job_ids), "-o", "%i"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    return proc.returncode == 0 and bool(proc.stdout.strip())


def _wait_done(run_dir: Path) -> None:
    record = _record(run_dir)
    ids = [record["download_job"], *(a["job_id"] for a in record["arrays"])]
    assert wait_until(lambda: not _live(ids), ARRAY_TIMEOUT_S, interval=1.0), (
        f"Slurm jobs {ids} still queued after {ARRAY_TIMEOUT_S}s"
    )


def _shards(run_dir: Path, env: dict[str, str]) -> tuple[int, dict[int, dict[str, Any]]]:
    proc = kt("slurm", "status", str(run_dir), "--json", env=env, timeout=60)
    assert proc.stderr == "", proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    return proc.returncode, {r["shard"]: r for r in rows}


def _config(tmp_path: Path, models: list[dict[str, Any]], **slurm: Any) -> Path:
    return write_config(
        tmp_path / "c.yaml",
        models,
        defaults={"tracers": ["torch_dispatch"], "device": "cpu"},
        slurm={"cpus_per_task": 1, **slurm},
    )


def test_three_shard_array_completes(
    tmp_path: Path,
    tiny_models: dict[str, Path],
    kt_env: dict[str, str],
    slurm_cluster: list[str],
) -> None:
    config = _config(tmp_path, [{"path": str(p)} for p in tiny_models.values()])
    _submit(config, kt_env, slurm_cluster, "--array-size", "3")
    run_dir = tmp_path / "run"
    _wait_done(run_dir)
    rc, shards = _shards(run_dir, kt_env)
    assert rc == 0
    assert sorted(shards) == [1, 2, 3]
    for row in shards.values():
        assert row["state"] == "COMPLETED", row
        assert row["statuses"] == {"ok": 1} and row["incomplete"] == [], row
    for name in tiny_models:
        assert status_of(run_dir, f"{name}/torch_dispatch")["status"] == "ok"
    # The plain status reads every shard's manifest.
    rows = kt("status", str(run_dir), "--json", env=kt_env, timeout=60).stdout.splitlines()
    assert sorted(json.loads(r)["status"] for r in rows) == ["ok"] * 3
    logs = sorted(p.name for p in (run_dir / "slurm" / "logs").glob("shard-*.out"))
    assert len(logs) == 3, logs
    assert sorted(p.name for p in run_dir.glob("run.shard-*.json")) == [
        f"run.shard-{i}-of-3.json" for i in (1, 2, 3)
    ]


def test_cancelled_task_is_resubmitted_alone(
    tmp_path: Path,
    tiny_models: dict[str, Path],
    kt_env: dict[str, str],
    slurm_cluster: list[str],
) -> None:
    slow = make_faulty_model(tmp_path / "models", "slow", seconds=6, name="slow")
    models: list[dict[str, Any]] = [
        {"path": str(tiny_models["tiny-llama"])},
        {"path": str(tiny_models["tiny-gpt2"])},
        {"path": str(slow), "trust_remote_code": True},
    ]
    config = _config(tmp_path, models)
    _submit(config, kt_env, slurm_cluster)  # default: one shard per model
    run_dir = tmp_path / "run"
    record = _record(run_dir)
    assert record["shards"] == 3
    marker = run_dir / "jobs" / "slow" / "torch_dispatch" / "slow.started"
    assert wait_until(marker.exists, ARRAY_TIMEOUT_S, interval=0.5), "slow job never started"
    _, shards = _shards(run_dir, kt_env)
    slow_shard = next(s for s, r in shards.items() if "slow/torch_dispatch" in r["incomplete"])
    array = record["arrays"][0]["job_id"]
    subprocess.run(["scancel", f"{array}_{slow_shard}"], check=True, timeout=30)
    _wait_done(run_dir)

    rc, shards = _shards(run_dir, kt_env)
    assert rc == 1  # a shard with incomplete jobs and no live task
    assert shards[slow_shard]["state"] == "CANCELLED", shards[slow_shard]
    assert shards[slow_shard]["incomplete"] == ["slow/torch_dispatch"]
    done = {s: r for s, r in shards.items() if s != slow_shard}
    assert all(r["state"] == "COMPLETED" and not r["incomplete"] for r in done.values()), done
    ok_files = [run_dir / "jobs" / m / "torch_dispatch" / "_TRACE_STATUS.json" for m in
                ("tiny-llama", "tiny-gpt2")]  # fmt: skip
    before = {p: p.stat().st_mtime_ns for p in ok_files}

    proc = kt("slurm", "resubmit", str(run_dir), env=kt_env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert f"shard(s) {slow_shard}" in proc.stdout, proc.stdout
    record = _record(run_dir)
    assert [a["tasks"] for a in record["arrays"]] == [[1, 2, 3], [slow_shard]]
    slurm_cluster.append(record["arrays"][-1]["job_id"])
    _wait_done(run_dir)

    rc, shards = _shards(run_dir, kt_env)
    assert rc == 0, shards
    assert shards[slow_shard]["state"] == "COMPLETED"
    assert shards[slow_shard]["job_id"] == record["arrays"][-1]["job_id"]
    assert all(r["incomplete"] == [] for r in shards.values()), shards
    assert status_of(run_dir, "slow/torch_dispatch")["status"] == "ok"
    assert {p: p.stat().st_mtime_ns for p in ok_files} == before  # not re-run
    again = kt("slurm", "resubmit", str(run_dir), env=kt_env, timeout=60)
    assert again.returncode == 0 and "nothing to resubmit" in again.stdout


def test_task_at_its_time_limit_leaves_jobs_interrupted(
    tmp_path: Path, kt_env: dict[str, str], slurm_cluster: list[str]
) -> None:
    slow = make_faulty_model(tmp_path / "models", "slow", seconds=600, name="slow")
    # Slurm's smallest limit is one minute, and it may send --signal up to 60 s early, so
    # this task gets no early signal: it meets the limit itself, where Slurm SIGTERMs every
    # process of the task (orchestrator and worker at once), then SIGKILLs after KillWait.
    config = _config(
        tmp_path, [{"path": str(slow), "trust_remote_code": True}], time="1", signal_s=0
    )
    started = time.monotonic()
    _submit(config, kt_env, slurm_cluster)
    run_dir = tmp_path / "run"
    _wait_done(run_dir)
    assert time.monotonic() - started < ARRAY_TIMEOUT_S
    job_dir = run_dir / "jobs" / "slow" / "torch_dispatch"
    assert (job_dir / "slow.started").exists()
    status = read_status(job_dir)  # validates: written whole, atomically
    assert status is not None
    assert status.status in ("interrupted", "timeout"), status
    assert not [p.name for p in job_dir.iterdir() if p.name.endswith(".tmp")]
    for out in status.outputs:
        assert (job_dir / out.path).stat().st_size == out.size
    rc, shards = _shards(run_dir, kt_env)
    assert rc == 1
    assert shards[1]["incomplete"] == ["slow/torch_dispatch"]
    assert shards[1]["state"] in ("TIMEOUT", "FAILED", "CANCELLED", "COMPLETED"), shards[1]
    log = next((run_dir / "slurm" / "logs").glob("shard-1-of-1.*.out")).read_text()
    assert "interrupted" in log, log[-2000:]


def test_a_multi_rank_job_runs_in_one_task_on_one_node(
    tmp_path: Path,
    tiny_models: dict[str, Path],
    kt_env: dict[str, str],
    slurm_cluster: list[str],
) -> None:
    """TP 2 on CPU: the task asks for one node and a core per rank (cpus_per_task unset: the
    ranks set it), and both ranks run in it, forked from their launcher."""
    config = write_config(
        tmp_path / "c.yaml",
        [{"path": str(tiny_models["tiny-llama"]), "name": "m", "parallel": {"tp": 2}}],
        defaults={"tracers": ["torch_dispatch"], "device": "cpu", "seq_len": 16},
    )
    _submit(config, kt_env, slurm_cluster)
    run_dir = tmp_path / "run"
    script = (run_dir / "slurm" / "array.sbatch").read_text()
    assert "#SBATCH --nodes=1\n" in script and "#SBATCH --cpus-per-task=2\n" in script, script
    _wait_done(run_dir)
    st = status_of(run_dir, "m/torch_dispatch.tp2")
    assert st["status"] == "ok", st.get("reason")
    assert st["summary"]["world_size"] == 2 and st["summary"]["rank_start"] == "fork"
    rc, shards = _shards(run_dir, kt_env)
    assert rc == 0 and shards[1]["state"] == "COMPLETED", shards
