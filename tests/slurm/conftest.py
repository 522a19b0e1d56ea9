"""Fixtures for the real-Slurm tests: a cluster of the project's own that runs jobs (required
under CI=true). Which cluster and why: tests/slurm/choice.py."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import require
from tests.slurm.choice import choose, probe
from tests.slurm.nodes import NODES, NodeCluster, cluster_home


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    """Yields a list the tests append their Slurm job ids to; all are cancelled at the end.

    Sets SLURM_CONF for the session, so the tests' own calls, the CLI subprocesses (``kt_env``
    copies the environment) and kerneltracer's in-process Slurm calls all reach the chosen one.
    """
    have = shutil.which("sbatch") is not None and shutil.which("sinfo") is not None
    require(have, "Slurm (sbatch and sinfo on PATH; scripts/slurm-up.sh sets one up)")
    choice = choose()
    require(not choice.refusal, choice.refusal)
    with pytest.MonkeyPatch.context() as mp:
        if choice.conf is not None:
            mp.setenv("SLURM_CONF", str(choice.conf))
        problem = probe(choice, Path(tmp_path_factory.mktemp("slurm-probe")))
        require(not problem, f"a Slurm that runs jobs: {problem}")
        submitted: list[str] = []
        yield submitted
        if submitted:
            subprocess.run(["scancel", *submitted], capture_output=True, timeout=30)


@pytest.fixture(scope="session")
def slurm_nodes() -> NodeCluster:
    """The multi-node cluster of scripts/slurm-nodes-up.sh (.ci/run starts it), with all its
    nodes up; required under CI=true."""
    cluster = NodeCluster(cluster_home())
    require(
        cluster.conf.is_file() and (cluster.bin / "sbatch").is_file(),
        f"the multi-node test cluster ({cluster.conf}; run scripts/slurm-nodes-up.sh as root)",
    )
    states = cluster.node_states()
    ready = [n for n in NODES if states.get(n) in ("idle", "mixed", "allocated")]
    require(
        len(ready) == len(NODES),
        f"the multi-node test cluster with nodes {', '.join(NODES)} up (sinfo: {states})",
    )
    return cluster
