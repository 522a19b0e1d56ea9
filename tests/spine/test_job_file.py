"""JOB.json: one typed envelope the orchestrator writes and the worker reads (core.jobspec)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kerneltracer.core.jobspec import JobFile, JobSpec, ModelRef
from kerneltracer.core.layout import RunPaths
from kerneltracer.errors import InputFileError


def _job() -> JobSpec:
    return JobSpec(
        key="m/torch_dispatch",
        model=ModelRef(display="m", slug="m", path="/models/m"),
        tracer="torch_dispatch",
        tracer_version="1",
        exclusive_group=None,
        framework="huggingface",
        mode="eval",
        device="cpu",
        dtype="float32",
        batch_size=1,
        seq_len=8,
        options={"steps": 2},
        timeout_s=60.0,
        max_rss_gb=None,
    )


def test_the_envelope_reads_back_as_written(tmp_path: Path) -> None:
    path = RunPaths(tmp_path).job("m/torch_dispatch").job_file
    JobFile(attempt="a1", job=_job()).write(path)
    back = JobFile.read(path)
    assert back.attempt == "a1" and back.job == _job()
    assert back.job.request_hash == _job().request_hash


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"", "not valid JSON"),
        (b'{"attempt": "a1", "job": ', "not valid JSON"),
        (b"[1, 2]", "not a job file: the file: Input should be"),
        (b'{"job": {}}', "not a job file: attempt: Field required (and"),
        (b'{"attempt": "a1", "job": {"key": 3}}', "not a job file: job.key: Input should be"),
    ],
)
def test_a_malformed_job_file_is_one_line_naming_it(
    tmp_path: Path, content: bytes, problem: str
) -> None:
    path = tmp_path / "JOB.json"
    path.write_bytes(content)
    with pytest.raises(InputFileError) as err:
        JobFile.read(path)
    assert str(err.value).startswith(f"job file {path}: {problem}"), str(err.value)
    assert "\n" not in str(err.value)


def test_a_missing_job_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match=r"JOB\.json"):
        JobFile.read(tmp_path / "JOB.json")


def test_the_worker_says_why_it_cannot_read_its_job_file(tmp_path: Path) -> None:
    """No traceback: one line on stderr and exit 2 (there is no job to write a status for)."""
    path = tmp_path / "JOB.json"
    path.write_text('{"attempt": "a1"}')
    proc = subprocess.run(
        [sys.executable, "-m", "kerneltracer.worker", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == (
        f"kerneltracer worker: job file {path}: not a job file: job: Field required"
    )
