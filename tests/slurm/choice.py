"""Which Slurm the real-Slurm tests use, decided before anything is submitted.

1. The project's own test cluster (``scripts/slurm-up.sh``: own config dir, ports and pid
   files): ``$KT_TEST_SLURM_CONF``, else the config that script writes. It is used.
2. Any other Slurm the caller's environment reaches (a user's real cluster, or a daemon that
   answers but is not ours) is used only when asked with ``KT_TEST_SLURM=ambient``: tests
   never submit to someone's cluster by surprise.
Whichever is chosen must then run a probe job: a cluster that answers ``sinfo`` but cannot
start jobs (a slurmd registered under another host name) fails every Slurm test at once with
the reason, instead of each waiting for its own timeout.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

OWN_CONF = Path("/var/lib/kerneltracer/slurm/slurm.conf")  # scripts/slurm-up.sh's default
PROBE_TIMEOUT_S = 60.0
_DONE = ("COMPLETED", "COMPLETING")
# The reason may hold spaces: it runs to the next " Key=" field.
_STATE = re.compile(r"JobState=(\S+) Reason=(.*?)(?= [A-Z]\w*=|$)", re.M)


@dataclass(frozen=True)
class SlurmChoice:
    conf: Path | None  # the SLURM_CONF the tests set; None: the ambient default
    label: str  # which cluster, for the pytest header and failure messages
    refusal: str = ""  # why the tests must not submit to it ("" = they may)


def choose(env: Mapping[str, str] = os.environ) -> SlurmChoice:
    own = Path(env.get("KT_TEST_SLURM_CONF") or OWN_CONF)
    if own.is_file():
        return SlurmChoice(own, f"kerneltracer's own test cluster (SLURM_CONF={own})")
    ambient = env.get("SLURM_CONF", "the default config")
    label = f"an existing Slurm ({ambient})"
    if env.get("KT_TEST_SLURM") == "ambient":
        return SlurmChoice(None, label)
    return SlurmChoice(
        None,
        label,
        refusal=f"no test cluster of the project's own ({own} missing: run scripts/slurm-up.sh "
        "as root); tests submit to another Slurm only with KT_TEST_SLURM=ambient",
    )


def slurm_env(choice: SlurmChoice, base: Mapping[str, str] = os.environ) -> dict[str, str]:
    env = dict(base)
    if choice.conf is not None:
        env["SLURM_CONF"] = str(choice.conf)
    return env


def _run(argv: list[str], env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, env=dict(env))


def probe(choice: SlurmChoice, workdir: Path, timeout_s: float = PROBE_TIMEOUT_S) -> str:
    """Submit one trivial job and wait for it to end; '' when it ran, else why not."""
    env = slurm_env(choice)
    sub = _run(
        [
            "sbatch",
            "--parsable",
            "-J",
            "kt-test-probe",
            "-o",
            str(workdir / "probe-%j.out"),
            "--time=1",
            "--wrap",
            "true",
        ],
        env,
    )
    if sub.returncode != 0:
        return f"{choice.label} refused a probe job: {sub.stderr.strip() or sub.stdout.strip()}"
    job_id = sub.stdout.strip().split(";")[0]
    deadline = time.monotonic() + timeout_s
    last = ""
    while time.monotonic() < deadline:
        state = _run(["scontrol", "-o", "show", "job", job_id], env).stdout
        found = _STATE.search(state)
        job_state, reason = found.groups() if found else ("", "")
        if job_state in _DONE:
            return ""
        if job_state and job_state not in ("PENDING", "RUNNING", "CONFIGURING"):
            return f"{choice.label} could not run a probe job: it ended {job_state} ({reason})"
        last = f"{job_state or 'unknown'} ({reason})"
        time.sleep(1)
    _run(["scancel", job_id], env)
    return f"{choice.label} did not run a probe job within {timeout_s:g}s: still {last}"
