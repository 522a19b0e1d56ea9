"""SIGINT and SIGTERM to `analyze`, `replay` and `slurm submit --wait`: exit 130 with one
line naming the signal, no process left behind, the interrupted work recorded as such.

SIGTERM used to end `analyze` with 143, no record and the analysis's child orphaned.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.helpers import kt_popen
from tests.report.runs import make_run, status

REPO = Path(__file__).resolve().parents[2]
KEY = "tiny/torch_profiler"
SIGNALS = [signal.SIGINT, signal.SIGTERM]


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), *sys.path]), **extra}


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _wait_for(path: Path, proc: object, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not (path.is_file() and path.read_text().strip()):
        assert proc.poll() is None, proc.communicate()  # type: ignore[attr-defined]
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.1)


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_analyze_records_the_running_analysis_as_interrupted(
    tmp_path: Path, sig: signal.Signals
) -> None:
    run = make_run(tmp_path / "run", {KEY: status(KEY, "tiny")})
    proc = kt_popen(
        "analyze",
        str(run),
        "--import",
        "tests.report.analysis_fixtures",
        "--only",
        "hang",
        env=_env(),
    )
    out = run / "jobs" / KEY / "analysis" / "hang"
    _wait_for(out / "grandchild.pid", proc)
    workers = psutil.Process(proc.pid).children(recursive=True)
    helper = int((out / "grandchild.pid").read_text())
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert stderr.strip().splitlines()[-1] == f"interrupted ({sig.name})"
    assert "Traceback" not in stderr
    marker = json.loads((out / "_ANALYSIS.json").read_text())
    assert marker["state"] == "interrupted"
    assert marker["error"] == f"interrupted by {sig.name}, killed"
    assert not _alive(helper), "the analysis's own child survived"
    assert not [w.pid for w in workers if _alive(w.pid)]


def _t(shape: list[int]) -> dict[str, object]:
    return {"shape": shape, "dtype": "float32", "device": "cpu"}


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_replay_records_what_ran_and_the_rest_as_interrupted(
    tmp_path: Path, sig: signal.Signals
) -> None:
    from kerneltracer.core.signature import signature_id
    from kerneltracer.corpus.export import write_corpus
    from kerneltracer.corpus.model import Corpus, Signature

    def one(op: str, inputs: list[object], outputs: list[object]) -> Signature:
        s = Signature(signature_id(op, inputs, {}), op, inputs, {}, outputs)
        s.model_calls["m"] = 1
        return s

    sigs = (
        one("aten.add.Tensor", [_t([2]), _t([2])], [_t([2])]),
        one("kt_test.hang.default", [_t([2])], [_t([2])]),
        one("aten.mul.Tensor", [_t([2]), _t([2])], [_t([2])]),
    )
    corpus = tmp_path / "corpus"
    write_corpus(Corpus(("m",), sigs), corpus)
    marker = tmp_path / "hang.pid"
    proc = kt_popen(
        "replay",
        str(corpus),
        "--import",
        "tests.fixtures.replay_ops",
        "--batch-size",
        "1",
        "--repeats",
        "1",
        env=_env(KT_TEST_HANG_PID=str(marker)),
    )
    _wait_for(marker, proc, seconds=300)
    worker = int(marker.read_text())
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert stderr.strip().splitlines()[-1] == f"interrupted ({sig.name})"
    assert not _alive(worker), "the replay worker survived"
    import csv

    with (corpus / "replay" / "replay.csv").open(newline="") as fh:
        rows = {r["op"]: r for r in csv.DictReader(fh)}
    assert {op: r["status"] for op, r in rows.items()} == {
        "aten.add.Tensor": "ok",
        "kt_test.hang.default": "interrupted",
        "aten.mul.Tensor": "interrupted",
    }
    assert rows["aten.mul.Tensor"]["reason"] == f"replay interrupted by {sig.name}"


_FAKE_SLURM = """#!/bin/sh
# A cluster that accepts everything and keeps every task pending (for --wait).
echo "$$" >> "$KT_FAKE_SLURM_LOG"
case "$(basename "$0")" in
  sbatch) echo 4242 ;;
  scontrol)
    case "$*" in
      *partition*) echo "PartitionName=debug Default=YES State=UP MaxTime=UNLIMITED Nodes=n1" ;;
      *config*) echo "JobCompLoc = /dev/null" ;;
      *) echo "JobId=4242 ArrayTaskId=1 JobState=PENDING Reason=Priority" ;;
    esac ;;
  sinfo) echo "n1|8|16000|(null)|idle" ;;
  squeue)
    case "$*" in
      *%F*) echo "4242|1|PENDING|(null)|Priority" ;;
      *) echo "PENDING|Priority" ;;
    esac ;;
esac
"""


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_slurm_wait_stops_following_and_leaves_nothing(tmp_path: Path, sig: signal.Signals) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("sbatch", "scontrol", "sinfo", "squeue", "sacct", "scancel"):
        (bin_dir / name).write_text(_FAKE_SLURM)
        (bin_dir / name).chmod(stat.S_IRWXU)
    log = tmp_path / "slurm-calls.log"
    model = tmp_path / "m"
    model.mkdir()
    config = tmp_path / "c.yaml"
    config.write_text(f"output_dir: {tmp_path / 'run'}\nmodels:\n  - path: {model}\n")
    env = _env(PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", KT_FAKE_SLURM_LOG=str(log))
    proc = kt_popen("slurm", "submit", str(config), "--wait", "--interval", "0.5", env=env)
    deadline = time.monotonic() + 120
    # Submitted and polled a few times: the follow loop is running.
    while not (log.is_file() and len(log.read_text().split()) > 12):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.1)
    children = psutil.Process(proc.pid).children(recursive=True)
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert stderr.strip().splitlines()[-1] == (
        f"stopped following ({sig.name}); the Slurm jobs go on: "
        f"kerneltracer slurm status {tmp_path / 'run'}"
    )
    assert not [c.pid for c in children if _alive(c.pid)]
