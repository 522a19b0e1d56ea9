"""Fixtures for the real-Slurm tests: a cluster that answers (required under CI=true)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator

import pytest

from tests.conftest import require


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[list[str]]:
    """Yields a list the tests append their Slurm job ids to; all are cancelled at the end."""
    have = shutil.which("sbatch") is not None and shutil.which("sinfo") is not None
    require(have, "Slurm (sbatch and sinfo on PATH; scripts/slurm-up.sh sets one up)")
    try:
        proc = subprocess.run(
            ["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=20
        )
        states = proc.stdout.split() if proc.returncode == 0 else []
    except subprocess.TimeoutExpired:
        states = []
    usable = any(s.rstrip("*~#") in ("idle", "mixed", "allocated", "completing") for s in states)
    require(usable, f"a Slurm cluster with a usable node (sinfo states: {states or 'no answer'})")
    submitted: list[str] = []
    yield submitted
    if submitted:
        subprocess.run(["scancel", *submitted], capture_output=True, timeout=30)
