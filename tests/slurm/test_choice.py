"""The real-Slurm tests pick a cluster of their own, never submit to another one unless asked,
and find out in seconds when the chosen one cannot run a job (issue 29, item 10)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.slurm.choice import choose, probe

_FAKE_SLURM = {
    # A controller that accepts jobs its node can never run: what a slurmd registered under
    # the host's own name gives a controller that expects `localhost`.
    "sbatch": "echo 4242",
    "scontrol": 'echo "JobId=4242 JobState=PENDING Reason=(Host vm not in hostlist localhost)"',
    "scancel": 'echo "$@" >> "$(dirname "$0")/cancelled"',
}


def _fake_slurm(bin_dir: Path) -> None:
    bin_dir.mkdir()
    for name, body in _FAKE_SLURM.items():
        path = bin_dir / name
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(0o755)


def test_own_cluster_config_is_chosen(tmp_path: Path) -> None:
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=kt-ci\n")
    choice = choose({"KT_TEST_SLURM_CONF": str(conf), "SLURM_CONF": "/etc/slurm/slurm.conf"})
    assert choice.conf == conf and not choice.refusal
    assert str(conf) in choice.label


def test_another_slurm_is_refused_unless_asked(tmp_path: Path) -> None:
    missing = tmp_path / "none.conf"
    refused = choose({"KT_TEST_SLURM_CONF": str(missing), "SLURM_CONF": "/site/slurm.conf"})
    assert refused.conf is None
    assert "slurm-up.sh" in refused.refusal and "KT_TEST_SLURM=ambient" in refused.refusal
    asked = choose({"KT_TEST_SLURM_CONF": str(missing), "KT_TEST_SLURM": "ambient"})
    assert asked.conf is None and not asked.refusal


def test_probe_names_why_a_cluster_cannot_run_jobs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    _fake_slurm(bin_dir)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    choice = choose({"KT_TEST_SLURM_CONF": str(tmp_path / "none"), "KT_TEST_SLURM": "ambient"})
    problem = probe(choice, tmp_path, timeout_s=2)
    assert "did not run a probe job within 2s" in problem
    assert "Host vm not in hostlist localhost" in problem
    assert (bin_dir / "cancelled").read_text().split() == ["4242"]  # nothing left queued


def test_session_uses_the_chosen_cluster(slurm_cluster: list[str]) -> None:
    """The session's Slurm calls reach the chosen cluster: with the project's own one, the
    controller that answers is kt-ci on its own port, not whatever else runs here."""
    choice = choose()
    if choice.conf is None:
        pytest.skip("KT_TEST_SLURM=ambient: the session uses the existing Slurm, as asked")
    assert os.environ["SLURM_CONF"] == str(choice.conf)
    shown = subprocess.run(
        ["scontrol", "show", "config"], capture_output=True, text=True, timeout=30, check=True
    ).stdout
    config = dict(
        (k.strip(), v.strip()) for k, _, v in (line.partition("=") for line in shown.splitlines())
    )
    assert config["ClusterName"] == "kt-ci"
    assert config["SLURM_CONF"] == str(choice.conf)
