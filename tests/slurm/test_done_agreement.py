"""Slurm status and ``run --shard`` share one definition of done (no Slurm needed).

For every shard, the jobs ``slurm status``/``resubmit`` call incomplete are exactly the jobs
the planner of ``run --shard i/N`` would run: a shard Slurm calls complete is never re-run,
one Slurm calls incomplete is never bypassed, and a changed request (a tracer option, the
commit a hub revision points to) makes both say incomplete. Job dirs are written with the
real status writer; the hub model is a real offline Hugging Face cache layout.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest

from kerneltracer.core.jobspec import JobSpec
from kerneltracer.core.status import (
    JobStatus,
    base_status,
    describe_output,
    read_status,
    write_status,
)
from kerneltracer.orchestrator.facade import RunRequest, open_run
from kerneltracer.orchestrator.shard import Shard
from kerneltracer.slurm.submit import SubmissionRecord, incomplete_jobs, shard_jobs

SHARDS = 2
HUB = "org--hubby"  # the hub model's slug: its job dirs
TRACERS = ["torch_dispatch", "torch_profiler", "print_aten", "print_aten_export"]
# The smallest safetensors file a completeness check accepts: an empty header, no tensors.
EMPTY_SAFETENSORS = (2).to_bytes(8, "little") + b"{}"


def _model_dir(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "config.json").write_text("{}")
    (path / "model.safetensors").write_bytes(EMPTY_SAFETENSORS)
    return path


def _hub_commit(cache: Path, repo: str, commit: str) -> None:
    """Point ``main`` of ``repo`` at ``commit`` in the cache, with a complete snapshot."""
    storage = cache / ("models--" + repo.replace("/", "--"))
    _model_dir(storage / "snapshots" / commit)
    (storage / "refs").mkdir(parents=True, exist_ok=True)
    (storage / "refs" / "main").write_text(commit)


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    cache = tmp_path / "hf"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    _hub_commit(cache, "org/hubby", "a" * 40)
    for name in ("m1", "m2", "m3"):
        _model_dir(tmp_path / name)
    return tmp_path / "c.yaml", tmp_path / "run"


def _write_config(config: Path, steps: int = 2) -> None:
    config.write_text(
        f"output_dir: run\n"
        f"defaults:\n  tracers: [{', '.join(TRACERS)}]\n"
        f"  tracer_options: {{torch_profiler: {{steps: {steps}}}}}\n"
        "models:\n  - path: m1\n  - path: m2\n  - path: m3\n"
        "  - id: org/hubby\n    revision: main\n"
    )


def _record(config: Path, run_dir: Path) -> SubmissionRecord:
    return SubmissionRecord(config=str(config), run_dir=str(run_dir), shards=SHARDS)


def _planner_to_run(config: Path, shard: int) -> set[str]:
    with open_run(RunRequest(config, shard=Shard(shard, SHARDS))) as session:
        assert not session.model_failures
        return {p.job.key for p in session.plan.to_run}


def _slurm_incomplete(config: Path, run_dir: Path, shard: int) -> set[str]:
    jobs = shard_jobs(_record(config, run_dir))[shard]
    return {j.key for j in incomplete_jobs(run_dir, jobs)}


def _agree(config: Path, run_dir: Path) -> dict[int, set[str]]:
    """Each shard's incomplete jobs, after checking both sides say the same."""
    out = {}
    for shard in range(1, SHARDS + 1):
        planner = _planner_to_run(config, shard)
        assert _slurm_incomplete(config, run_dir, shard) == planner, f"shard {shard}"
        out[shard] = planner
    return out


def _finish(config: Path, status: JobStatus = JobStatus.OK, only: set[str] | None = None) -> None:
    """Play the workers: every job the planner would run ends with ``status``."""
    for shard in range(1, SHARDS + 1):
        with open_run(RunRequest(config, shard=Shard(shard, SHARDS))) as session:
            for p in session.plan.to_run:
                if only is None or p.job.key in only:
                    _write(p.job, p.job_dir, status)


def _write(job: JobSpec, job_dir: Path, status: JobStatus) -> None:
    if job_dir.exists():
        shutil.rmtree(job_dir)
    job_dir.mkdir(parents=True)
    (job_dir / "out.txt").write_text(f"{job.key}\n")
    outputs = [describe_output(job_dir, "out.txt")] if status == JobStatus.OK else []
    write_status(job_dir, base_status(job, uuid.uuid4().hex, status, outputs=outputs))


def _all(pending: dict[int, set[str]]) -> set[str]:
    return set().union(*pending.values())


def test_slurm_and_run_shard_agree_on_done(setup: tuple[Path, Path]) -> None:
    config, run_dir = setup
    _write_config(config)
    fresh = _agree(config, run_dir)
    assert len(_all(fresh)) == 4 * len(TRACERS)  # nothing ran: everything is incomplete

    # The first alternative of the print_aten group fails, the second succeeds: the group is
    # satisfied, so neither side re-runs the failed one.
    first = {k for k in _all(fresh) if k.endswith("/print_aten")}
    _finish(config, JobStatus.FAILED, only=first)
    _finish(config, only={k for k in _all(fresh) if k.endswith("/print_aten_export")})
    assert _all(_agree(config, run_dir)) == {
        k for k in _all(fresh) if k.split("/")[1] in ("torch_dispatch", "torch_profiler")
    }
    _finish(config)
    assert _all(_agree(config, run_dir)) == set()
    for key in first:
        status = read_status(run_dir / "jobs" / key)
        assert status is not None and status.status == JobStatus.FAILED

    # Unsupported and failed jobs run again (the planner bypasses only ok), damaged outputs too.
    jobs = run_dir / "jobs"
    for key, status in (("m1/torch_dispatch", "unsupported"), ("m2/torch_dispatch", "failed")):
        raw = (jobs / key / "_TRACE_STATUS.json").read_text()
        (jobs / key / "_TRACE_STATUS.json").write_text(raw.replace('"ok"', f'"{status}"', 1))
    (jobs / "m3/torch_profiler/out.txt").unlink()
    (jobs / HUB / "torch_dispatch/_TRACE_STATUS.json").write_text('{"schema_version": 1, "st')
    assert _all(_agree(config, run_dir)) == {
        "m1/torch_dispatch",
        "m2/torch_dispatch",
        "m3/torch_profiler",
        f"{HUB}/torch_dispatch",
    }
    _finish(config)
    assert _all(_agree(config, run_dir)) == set()


def test_a_changed_request_is_incomplete_for_both(setup: tuple[Path, Path]) -> None:
    config, run_dir = setup
    _write_config(config)
    _finish(config)
    assert _all(_agree(config, run_dir)) == set()

    _write_config(config, steps=3)  # a tracer option: the profiler jobs' request changes
    assert _all(_agree(config, run_dir)) == {f"{m}/torch_profiler" for m in ("m1", "m2", "m3", HUB)}
    _write_config(config)
    assert _all(_agree(config, run_dir)) == set()

    # The hub moved main and the cache followed: every job of that model is a new request.
    _hub_commit(run_dir.parent / "hf", "org/hubby", "b" * 40)
    assert _all(_agree(config, run_dir)) == {f"{HUB}/{t}" for t in TRACERS}


def test_slurm_without_the_cache_takes_the_recorded_commit(
    setup: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A login node that cannot see the nodes' HF cache still calls finished hub jobs done."""
    config, run_dir = setup
    _write_config(config)
    _finish(config)
    monkeypatch.setenv("HF_HUB_CACHE", str(run_dir.parent / "elsewhere"))
    for shard in range(1, SHARDS + 1):
        assert _slurm_incomplete(config, run_dir, shard) == set()
