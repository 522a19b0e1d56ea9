"""A real `kerneltracer run` over a good hub model, a broken one and a local path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import kt, status_of, write_config
from tests.hub.conftest import HubRepos

pytestmark = pytest.mark.e2e


def test_broken_hub_model_fails_its_jobs_and_the_others_run(
    tmp_path: Path, repos: HubRepos, hub_env: dict[str, str]
) -> None:
    cfg = write_config(
        tmp_path / "config.yaml",
        [
            {"id": repos.gpt2.repo_id},
            {"id": "org/missing-model"},
            {"path": str(repos.dirs["tiny-bert"])},
        ],
        defaults={"seq_len": 8},
        download={"timeout_s": 60},
    )
    proc = kt("run", str(cfg), "--only", "torch_dispatch", env=hub_env, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    run_dir = tmp_path / "run"

    broken = status_of(run_dir, "org--missing-model/torch_dispatch")
    assert broken["status"] == "failed"
    assert broken["reason"].startswith(
        "model not_found: repository org/missing-model not found on the hub"
    )
    good = status_of(run_dir, "org--tiny-gpt2/torch_dispatch")
    assert good["status"] == "ok", good["reason"]
    assert good["request"]["revision"] == repos.gpt2.commit
    assert good["model"]["resolved_revision"] == repos.gpt2.commit
    assert good["model"]["local_dir"].endswith(
        f"models--org--tiny-gpt2/snapshots/{repos.gpt2.commit}"
    )
    local = status_of(run_dir, "tiny-bert/torch_dispatch")
    assert local["status"] == "ok", local["reason"]
    results = json.loads((run_dir / "downloads/results.json").read_text())
    assert {r["model"]: r["outcome"] for r in results} == {
        "org/tiny-gpt2": "ok",
        "org/missing-model": "not_found",
        str(repos.dirs["tiny-bert"]): "ok",
    }

    # Again: the complete cache asks the hub nothing, complete jobs are bypassed.
    repos.hub.clear_log()
    again = kt("run", str(cfg), "--only", "torch_dispatch", env=hub_env, timeout=300)
    assert again.returncode == 1
    assert repos.hub.requests_for(repos.gpt2.repo_id) == []
    assert "3 job(s): 1 to run, 2 already complete" in again.stderr

    # `download` reports the same per model, and fails because of the broken one.
    dl = kt("download", str(cfg), env=hub_env, timeout=120)
    assert dl.returncode == 1
    lines = dl.stdout.splitlines()
    assert any(ln.startswith("ok") and f"org/tiny-gpt2  {repos.gpt2.commit}" in ln for ln in lines)
    assert any(ln.startswith("not_found") and "org/missing-model" in ln for ln in lines)
    assert lines[-1] == "2/3 model(s) ready"
    # Not a terminal: no progress bars, one line for the model that failed.
    assert [ln.split()[0] for ln in dl.stderr.splitlines()] == ["not_found"]
