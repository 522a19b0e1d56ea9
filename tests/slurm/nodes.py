"""The multi-node test cluster (scripts/slurm-nodes-up.sh) as the tests see it: where it is,
how to reach it (its client wrappers run in the controller's namespace, the login node), the
storage every node shares, and how to lose one of its nodes."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
UP = REPO / "scripts" / "slurm-nodes-up.sh"
DOWN = REPO / "scripts" / "slurm-nodes-down.sh"
DEFAULT_HOME = Path("/var/lib/kerneltracer/slurm-nodes")  # the script's default
PREFIX = "ktsn-"
NODES = ("kt-n1", "kt-n2", "kt-n3")


@dataclass(frozen=True)
class NodeCluster:
    home: Path

    @property
    def conf(self) -> Path:
        return self.home / "slurm.conf"

    @property
    def bin(self) -> Path:
        return self.home / "bin"

    @property
    def shared(self) -> Path:
        """Seen by every node at the same path (the run dirs, models and configs go here:
        /tmp is each node's own)."""
        return self.home / "shared"

    def env(self, base: dict[str, str], hf_home: Path) -> dict[str, str]:
        env = dict(base)
        env["PATH"] = f"{self.bin}:{env.get('PATH', '/usr/bin:/bin')}"
        env["SLURM_CONF"] = str(self.conf)
        env["HF_HOME"] = str(hf_home)
        return env

    def run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        """A Slurm client command through the cluster's wrappers."""
        return subprocess.run(
            [str(self.bin / argv[0]), *argv[1:]],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "SLURM_CONF": str(self.conf)},
        )

    def node_states(self) -> dict[str, str]:
        out = self.run("sinfo", "-h", "-N", "-o", "%N %T").stdout
        return dict(line.split(maxsplit=1) for line in out.splitlines() if " " in line)

    def lose(self, node: str) -> None:
        """The node dies with its tasks: every process in its namespaces is killed (its
        slurmd, job steps and kerneltracer alike), then Slurm is told it is down rather than
        left to time it out."""
        netns = PREFIX + node.removeprefix("kt-")
        pids = subprocess.run(
            ["ip", "netns", "pids", netns], capture_output=True, text=True, check=True
        ).stdout.split()
        if pids:
            subprocess.run(["kill", "-KILL", *pids], check=False)
        self.run("scontrol", "update", f"NodeName={node}", "State=DOWN", "Reason=test-lost-node")

    def restore(self) -> subprocess.CompletedProcess[str]:
        """Start the lost node again (the script restarts only the slurmds that are gone)."""
        return subprocess.run(
            ["bash", str(UP)],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "KT_SLURM_NODES_HOME": str(self.home)},
        )


def cluster_home(env: dict[str, str] | os._Environ[str] = os.environ) -> Path:
    return Path(env.get("KT_SLURM_NODES_HOME") or DEFAULT_HOME)
