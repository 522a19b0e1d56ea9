"""Against the real one-node Slurm (scripts/slurm-up.sh): a request larger than every node is
refused before anything is submitted, the defaults are fitted to the node, and a task that
can never start is shown with Slurm's reason as an error (status, resubmit, submit --wait)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from kerneltracer.core.status import now_iso
from kerneltracer.slurm import submit as sub
from kerneltracer.slurm.submit import ArraySubmission, SubmissionRecord, save_record
from tests.helpers import kt, make_faulty_model, status_of, wait_until, write_config

pytestmark = pytest.mark.timeout(240)
DEFAULT_CPUS = 4  # SlurmSettings.cpus_per_task when the config sets none


def _node_cpus() -> int:
    proc = subprocess.run(
        ["sinfo", "-h", "-N", "-o", "%c"], capture_output=True, text=True, timeout=30, check=True
    )
    return max(int(x.rstrip("+")) for x in proc.stdout.split())


def _config(tmp_path: Path, models: list[dict[str, Any]], **top: Any) -> Path:
    return write_config(
        tmp_path / "c.yaml",
        models,
        defaults={"tracers": ["torch_dispatch"], "device": "cpu"},
        **top,
    )


def _my_jobs() -> set[str]:
    proc = subprocess.run(
        ["squeue", "-h", "--me", "-o", "%F"], capture_output=True, text=True, timeout=30
    )
    return set(proc.stdout.split())


def _reason(job_id: str) -> str:
    proc = subprocess.run(
        ["squeue", "-h", "-r", "-j", job_id, "-o", "%r"], capture_output=True, text=True, timeout=30
    )
    return proc.stdout.strip()


def test_request_larger_than_every_node_is_refused(
    tmp_path: Path, kt_env: dict[str, str], slurm_cluster: list[str]
) -> None:
    most = _node_cpus()
    config = _config(tmp_path, [{"id": "org/never-downloaded"}], slurm={"cpus_per_task": most + 2})
    before = _my_jobs()
    proc = kt("slurm", "submit", str(config), env=kt_env, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        f"error: slurm.cpus_per_task {most + 2}: partition debug offers at most {most} CPUs "
        "per node"
    ]
    assert proc.stdout == ""
    assert not (tmp_path / "run" / "slurm" / "submission.json").exists()
    assert _my_jobs() <= before  # nothing new was queued


def test_config_without_slurm_section_runs_with_fitted_default(
    tmp_path: Path,
    tiny_models: dict[str, Path],
    kt_env: dict[str, str],
    slurm_cluster: list[str],
) -> None:
    config = _config(tmp_path, [{"path": str(tiny_models["tiny-gpt2"])}])
    assert "slurm" not in yaml.safe_load(config.read_text())
    expected = min(DEFAULT_CPUS, _node_cpus())
    proc = kt("slurm", "submit", str(config), "--wait", "--interval", "1", env=kt_env, timeout=200)
    run_dir = tmp_path / "run"
    record = json.loads((run_dir / "slurm" / "submission.json").read_text())
    slurm_cluster += [record["download_job"], record["arrays"][-1]["job_id"]]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"1 shard(s), after the download; {expected} CPU(s)" in proc.stdout, proc.stdout
    if expected < DEFAULT_CPUS:
        assert f"note: slurm.cpus_per_task not set: using {expected}" in proc.stderr
    assert f"#SBATCH --cpus-per-task={expected}\n" in (run_dir / "slurm/array.sbatch").read_text()
    assert "jobs done 1/1" in proc.stdout  # the last progress line
    assert status_of(run_dir, "tiny-gpt2/torch_dispatch")["status"] == "ok"
    assert "COMPLETED" in proc.stdout


def _submit_around_the_check(tmp_path: Path, cpus: int) -> tuple[Path, str]:
    """What a user gets with plain sbatch (or an older kerneltracer): an array no node can run."""
    config = _config(tmp_path, [{"id": "org/never-downloaded"}], slurm={"cpus_per_task": cpus})
    prepared = sub.prepare(config)  # no partition lookup: unchecked
    sub.write_scripts(prepared)
    proc = subprocess.run(
        ["sbatch", "--parsable", "--array=1", str(prepared.array_path)],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    job_id = proc.stdout.strip().split(";")[0]
    record = SubmissionRecord(
        config=str(prepared.spec.config),
        run_dir=str(prepared.spec.run_dir),
        shards=1,
        arrays=[ArraySubmission(job_id=job_id, tasks=[1], submitted_at=now_iso())],
    )
    save_record(prepared.spec.run_dir, record)
    return config, job_id


def test_task_held_in_partition_config_is_an_error(
    tmp_path: Path, kt_env: dict[str, str], slurm_cluster: list[str]
) -> None:
    most = _node_cpus()
    config, job_id = _submit_around_the_check(tmp_path, most + 2)
    slurm_cluster.append(job_id)
    assert wait_until(lambda: _reason(job_id) == "PartitionConfig", 60, interval=1.0), _reason(
        job_id
    )
    run_dir = tmp_path / "run"
    proc = kt("slurm", "status", str(run_dir), env=kt_env, timeout=60)
    assert proc.returncode == 1
    assert "PENDING (PartitionConfig)" in proc.stdout, proc.stdout
    assert proc.stderr.splitlines() == [
        f"error: shard 1 (slurm job {job_id}_1): PENDING (PartitionConfig) never starts by "
        "itself: the request exceeds what the partition's nodes offer"
    ]
    proc = kt("slurm", "status", str(run_dir), "--json", env=kt_env, timeout=60)
    row = json.loads(proc.stdout)
    assert proc.returncode == 1 and proc.stderr == ""
    assert (row["state"], row["reason"], row["live"]) == ("PENDING", "PartitionConfig", False)
    assert row["stuck"] == "the request exceeds what the partition's nodes offer"

    # resubmit checks the config again: still too large, so nothing changes.
    proc = kt("slurm", "resubmit", str(run_dir), env=kt_env, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"error: slurm.cpus_per_task {most + 2}: partition debug")
    assert _reason(job_id) == "PartitionConfig"
    # Fixed: the stuck task is cancelled and replaced.
    data = yaml.safe_load(config.read_text())
    data["slurm"]["cpus_per_task"] = 1
    config.write_text(yaml.safe_dump(data))
    proc = kt("slurm", "resubmit", str(run_dir), env=kt_env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    new_job = json.loads((run_dir / "slurm" / "submission.json").read_text())["arrays"][-1]
    slurm_cluster.append(new_job["job_id"])
    subprocess.run(["scancel", new_job["job_id"]], timeout=30, check=False)  # not needed further
    assert f"cancelled stuck task(s) {job_id}_1" in proc.stdout
    assert wait_until(lambda: _reason(job_id) == "", 30, interval=1.0)


def test_wait_exits_with_the_reason_when_nothing_can_start(
    tmp_path: Path, kt_env: dict[str, str], slurm_cluster: list[str]
) -> None:
    """An extra sbatch option slips past the check: neither the download job nor the array can
    ever start; --wait says so and exits 1 instead of following forever."""
    too_many = f"--cpus-per-task={_node_cpus() + 2}"
    config = _config(
        tmp_path,
        [{"id": "org/never-downloaded"}],
        slurm={"cpus_per_task": 1, "extra_sbatch": [too_many]},
    )
    proc = kt("slurm", "submit", str(config), "--wait", "--interval", "1", env=kt_env, timeout=120)
    record = json.loads((tmp_path / "run" / "slurm" / "submission.json").read_text())
    download, array = record["download_job"], record["arrays"][-1]["job_id"]
    slurm_cluster += [download, array]
    assert proc.returncode == 1, proc.stdout + proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    # Slurm shows the array's own PartitionConfig, or Dependency on the stuck download.
    assert len(errors) == 1, proc.stderr
    assert errors[0].startswith(f"error: shard 1 (slurm job {array}_1): PENDING ("), errors
    assert "never starts by itself" in errors[0] and "PartitionConfig" in errors[0], errors
    assert "STUCK (" in proc.stdout


def test_wait_exits_1_when_a_task_fails(
    tmp_path: Path,
    tiny_models: dict[str, Path],
    kt_env: dict[str, str],
    slurm_cluster: list[str],
) -> None:
    broken = make_faulty_model(tmp_path / "models", "exception", name="broken")
    models = [
        {"path": str(tiny_models["tiny-gpt2"])},
        {"path": str(broken), "trust_remote_code": True},
    ]
    config = _config(tmp_path, models, slurm={"cpus_per_task": 1})
    proc = kt("slurm", "submit", str(config), "--wait", "--interval", "1", env=kt_env, timeout=200)
    run_dir = tmp_path / "run"
    record = json.loads((run_dir / "slurm" / "submission.json").read_text())
    array = record["arrays"][-1]["job_id"]
    slurm_cluster += [record["download_job"], array]
    assert proc.returncode == 1, proc.stdout + proc.stderr
    failed = [r for r in proc.stderr.splitlines() if r.startswith("error:")]
    assert len(failed) == 1, proc.stderr
    assert failed[0].startswith("error: shard ") and f"(slurm job {array}_" in failed[0]
    assert ": FAILED (" in failed[0], failed  # the reason: NonZeroExitCode, or the exit code
    assert failed[0].endswith("1 of 1 job(s) incomplete: broken/torch_dispatch"), failed
    assert f"task logs: {run_dir / 'slurm' / 'logs'}" in proc.stderr
    assert status_of(run_dir, "broken/torch_dispatch")["status"] == "failed"
    assert status_of(run_dir, "tiny-gpt2/torch_dispatch")["status"] == "ok"
