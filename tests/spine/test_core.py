"""The core package: dependency-free, lenient manifests, and one reader of job dirs."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from kerneltracer.core.jobspec import JobSpec
from kerneltracer.core.layout import JobKey, RunPaths, manifest_name
from kerneltracer.core.manifest import (
    ManifestJob,
    OrchestratorInfo,
    RunManifest,
    read_manifest,
    write_manifest,
)
from kerneltracer.core.rundir import RunDir, StatusProblem
from kerneltracer.core.state import job_state
from kerneltracer.core.status import JobStatus, base_status, describe_output, write_status
from kerneltracer.core.stop import StopKind, StopReason
from kerneltracer.core.wellformed import manifest_paths
from kerneltracer.errors import RunDirError
from kerneltracer.orchestrator.expand import plan_jobs


@pytest.fixture
def jobs(tmp_path: Path) -> list[JobSpec]:
    from kerneltracer.config import RunConfig

    cfg = RunConfig.model_validate(
        {"defaults": {"tracers": ["torch_dispatch"]}, "models": [{"id": "org/m"}]}
    )
    return plan_jobs(cfg, tmp_path)


CORE_DIR = Path(__file__).resolve().parents[2] / "kerneltracer" / "core"
CORE = sorted(p.stem for p in CORE_DIR.glob("*.py") if p.stem != "__init__")
# What core may use of the rest of the package: leaf modules that import nothing of ours
# (inputguard only errors and environ), so every command can read run dirs without planning
# or config.
CORE_MAY_USE = {
    "kerneltracer",
    "kerneltracer.environ",
    "kerneltracer._version",  # the package root imports it
    "kerneltracer._public",  # and its lazy names
    "kerneltracer.errors",
    "kerneltracer.inputguard",
    "kerneltracer.jsonio",
}


def test_core_imports_nothing_of_ours_outside_core_but_the_leaf_modules() -> None:
    code = (
        "import sys\n"
        + "".join(f"import kerneltracer.core.{m}\n" for m in CORE)
        + "print('\\n'.join(sorted(sys.modules)))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(proc.stdout.split())
    assert {"layout", "status", "jobspec"} <= set(CORE)
    assert {f"kerneltracer.core.{m}" for m in CORE} <= loaded  # the probe really ran
    heavy = {"torch", "transformers", "vllm", "yaml"}
    assert not heavy & loaded, sorted(heavy & loaded)
    ours = {m for m in loaded if m.split(".")[0] == "kerneltracer"}
    outside = {m for m in ours if not m.startswith("kerneltracer.core")} - CORE_MAY_USE
    assert outside == set()


def test_manifest_reads_older_newer_and_odd_files(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_text(
        json.dumps(
            {
                "future_field": {"x": 1},
                "wall_s": "not a number",
                "finished_at": None,
                "orchestrator": {"pid": 12, "host": "h", "since": "later"},
                "jobs": [{"key": "m/t", "model": "org/m", "extra": 1}, {"nokey": 1}, "junk"],
            }
        )
    )
    manifest = read_manifest(path)
    assert manifest is not None and manifest.open and manifest.wall_s is None
    assert [j.key for j in manifest.jobs] == ["m/t"] and manifest.jobs[0].model == "org/m"
    assert manifest.model_extra == {"future_field": {"x": 1}}
    assert manifest.orchestrator is not None and manifest.orchestrator.pid == 12
    path.write_text("[1, 2]")
    assert read_manifest(path) is None
    (tmp_path / manifest_name("shard-1-of-2")).write_text("{}")
    (tmp_path / "run_summary.json").write_text("{}")
    assert [p.name for p in manifest_paths(tmp_path)] == ["run.json", "run.shard-1-of-2.json"]
    assert RunManifest.model_validate({}).jobs == []


def test_job_key_parts() -> None:
    parts = JobKey.parse("org--m/print_aten.train.generate")
    assert (parts.slug, parts.tracer, parts.mode, parts.phase) == (
        "org--m",
        "print_aten",
        "train",
        "generate",
    )
    assert JobKey.parse("m/torch_dispatch").mode == "eval"


def test_records_say_why_a_status_is_unusable(jobs: list[JobSpec], tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    with pytest.raises(RunDirError, match="does not exist"):
        RunDir.open(run_dir)
    job = jobs[0]
    job_dir = RunPaths(run_dir).job(job.key).dir
    job_dir.mkdir(parents=True)
    (job_dir / "out.txt").write_text("x")
    ok = base_status(
        job, uuid.uuid4().hex, JobStatus.OK, outputs=[describe_output(job_dir, "out.txt")]
    )
    write_status(job_dir, ok)
    run = RunDir.open(run_dir)
    record = run.record(job.key)
    assert record.problem is None and record.status is not None
    assert record.outputs == ("out.txt",) and record.tracer == job.tracer
    assert job_state(record, job).done
    changed = job.model_copy(update={"seq_len": 99})
    assert job_state(record, changed).reason == "request changed (seq_len)"
    status_file = job_dir / "_TRACE_STATUS.json"
    cases = {
        b'{"schema_version": 1, "sta': StatusProblem.NOT_JSON,
        b'{"schema_version": 2}': StatusProblem.OTHER_SCHEMA,
        b"[]": StatusProblem.OTHER_SCHEMA,
        b'{"schema_version": 1, "status": "exploded"}': StatusProblem.INVALID,
    }
    for data, problem in cases.items():
        status_file.write_bytes(data)
        record = run.record(job.key)
        assert record.problem == problem and record.status is None
        assert not job_state(record, job).done
    status_file.unlink()
    assert run.record(job.key).problem == StatusProblem.MISSING
    assert [r.key for r in run.records()] == []  # a bare dir is no started job
    (job_dir / "JOB.json").write_text("{}")
    assert [r.key for r in run.records()] == [job.key]


def test_plan_jobs_keys_are_the_layouts(tmp_path: Path) -> None:
    from kerneltracer.config import RunConfig

    cfg = RunConfig.model_validate(
        {
            "defaults": {"tracers": ["torch_dispatch"]},
            "models": [{"id": "org/m", "phase": "decode"}],
        }
    )
    (job,) = plan_jobs(cfg, tmp_path)
    assert job.key == "org--m/torch_dispatch.decode"
    parts = JobKey.parse(job.key)
    assert (parts.mode, parts.phase) == ("eval", "decode")


def test_stop_reason_names_its_status_and_reads_as_one_line() -> None:
    stop = StopReason(StopKind.TIMEOUT, "no result after 5 s")
    assert str(stop) == "timeout: no result after 5 s"
    statuses = {kind: kind.status for kind in StopKind}
    assert statuses == {
        StopKind.TIMEOUT: JobStatus.TIMEOUT,
        StopKind.MEMORY: JobStatus.OOM,
        StopKind.INTERRUPT: JobStatus.INTERRUPTED,
    }


def test_manifest_round_trips_through_the_writer(tmp_path: Path) -> None:
    manifest = RunManifest(
        shard="1/2",
        orchestrator=OrchestratorInfo(pid=7, host="h"),
        jobs=[ManifestJob(key="m/t", model="org/m", tracer="t", mode="eval", phase="prefill")],
    )
    path = write_manifest(tmp_path, manifest, "shard-1-of-2")
    assert path.name == "run.shard-1-of-2.json"
    assert read_manifest(path) == manifest


def test_orphaned_temps_of_atomic_writes_are_swept_and_nothing_else(tmp_path: Path) -> None:
    from kerneltracer.jsonio import atomic_write_json, remove_orphaned_temps

    atomic_write_json(tmp_path / "_TRACE_STATUS.json", {"status": "ok"})
    (tmp_path / "._TRACE_STATUS.json.ab12.tmp").write_text("{")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".trace.json.gz.tmp").write_bytes(b"\x1f")
    (tmp_path / ".stage.x1.tmp").mkdir()
    (tmp_path / ".stage.x1.tmp" / "inner.json").write_text("{")
    kept = ["tmp", "notes.tmp", ".hidden", "sub/trace.json.gz"]
    (tmp_path / "tmp").mkdir()
    (tmp_path / "notes.tmp").write_text("a user's file, not ours")
    (tmp_path / ".hidden").write_text("x")
    (tmp_path / "sub" / "trace.json.gz").write_bytes(b"\x1f")
    busy = tmp_path / "analysis" / "timeline"  # another process's writes: left alone
    busy.mkdir(parents=True)
    (busy / "._ANALYSIS.json.zz9.tmp").write_text("{")
    kept.append("analysis/timeline/._ANALYSIS.json.zz9.tmp")
    removed = remove_orphaned_temps(tmp_path, skip=[tmp_path / "analysis"])
    assert sorted(p.relative_to(tmp_path).as_posix() for p in removed) == [
        "._TRACE_STATUS.json.ab12.tmp",
        ".stage.x1.tmp",
        "sub/.trace.json.gz.tmp",
    ]
    assert all((tmp_path / k).exists() for k in kept)
    assert json.loads((tmp_path / "_TRACE_STATUS.json").read_text()) == {"status": "ok"}


def test_job_file_is_written_atomically_without_fsync_and_the_status_with(
    jobs: list[JobSpec], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """JOB.json is useless after a crash of the machine (no status: the job runs again with
    a new one), so it costs no fsync; a status is fsynced with its directory."""
    import os

    from kerneltracer.core.jobspec import JobFile

    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd))[1])
    job_file = tmp_path / "JOB.json"
    JobFile(attempt="a", job=jobs[0]).write(job_file)
    assert JobFile.read(job_file).job == jobs[0]
    assert synced == []
    assert [p.name for p in tmp_path.iterdir()] == ["JOB.json"]  # no temp file left
    write_status(tmp_path, base_status(jobs[0], "a", JobStatus.OK))
    assert len(synced) == 2  # the file, then the directory that names it
