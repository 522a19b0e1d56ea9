"""The slurm/shard CLI without a cluster: one-line errors, dry runs that submit nothing."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tests.helpers import kt, write_config


def _env(tmp_path: Path) -> dict[str, str]:
    # No Slurm on PATH: a dry run must not need it.
    return {**os.environ, "PATH": os.path.dirname(sys.executable), "HF_HOME": str(tmp_path)}


def test_bad_shard_is_one_line(tmp_path: Path) -> None:
    config = write_config(tmp_path / "c.yaml", [{"id": "org/model"}])
    proc = kt("run", str(config), "--shard", "3/2", env=_env(tmp_path), timeout=60)
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines() == [
        "error: --shard '3/2': I must be between 1 and 2 (shards are 1-based)"
    ]
    assert not (tmp_path / "run").exists()


def test_dry_run_prints_scripts_and_submits_nothing(tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "c.yaml", [{"id": "org/a"}, {"id": "org/b"}], slurm={"cpus_per_task": 2}
    )
    proc = kt(
        "slurm", "submit", str(config), "--dry-run", "--max-parallel", "1", env=_env(tmp_path)
    )
    assert proc.returncode == 0, proc.stderr
    assert "--array=1-2%1 --dependency=afterok:<download job id>" in proc.stdout
    assert proc.stdout.count("#!/bin/bash") == 2
    assert '--shard "${SLURM_ARRAY_TASK_ID}/2"' in proc.stdout
    assert "download " + str(config) in proc.stdout
    assert not (tmp_path / "run").exists()


def test_status_without_submission_is_one_line(tmp_path: Path) -> None:
    proc = kt("slurm", "status", str(tmp_path), env=_env(tmp_path), timeout=60)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "has no Slurm submission" in lines[0], lines
