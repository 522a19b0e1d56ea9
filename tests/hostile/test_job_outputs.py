"""Job outputs are user files too: a run dir can be copied, hand-edited or damaged. coverage
and corpus read them through the input guard, so a 1 GiB sparse file where a job's dispatch
outputs belong is refused from its first bytes (counted as unreadable), not read whole."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.helpers import KT
from tests.report.runs import make_run, status

KEY = "sparse/torch_dispatch"
OUTPUTS = ("dispatch_ops.jsonl", "dispatch_summary.json")


@pytest.fixture(scope="module")
def sparse_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    outputs = [{"path": n, "size": 1 << 30, "sha256": "0", "mtime_ns": 0} for n in OUTPUTS]
    run = make_run(
        tmp_path_factory.mktemp("sparse") / "run", {KEY: status(KEY, "sparse", outputs=outputs)}
    )
    for name in OUTPUTS:
        with open(run / "jobs" / KEY / name, "wb") as fh:
            fh.truncate(1 << 30)
    return run


@pytest.mark.parametrize(
    ("command", "output"), [("coverage", "dispatch_summary.json"), ("corpus", "dispatch_ops.jsonl")]
)
def test_sparse_job_output_is_refused_not_read(
    sparse_run: Path, tmp_path: Path, command: str, output: str
) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), *sys.path])}
    done = subprocess.run(
        [*KT, command, str(sparse_run), "-o", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    text = done.stdout + done.stderr
    assert done.returncode == 0, text
    assert "internal error" not in text and "Traceback" not in text, text
    assert f"{output}: binary data with no line break, not a job output" in text
