"""Small hand-made run dirs for the report's unit tests (no worker, no framework)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from kerneltracer.core.layout import JobPaths


def status(key: str, display: str, status: str = "ok", **fields: Any) -> dict[str, Any]:
    slug, tracer = key.split("/")
    data: dict[str, Any] = {
        "schema_version": 1,
        "status": status,
        "job_key": key,
        "attempt": "t",
        "request": {},
        "request_hash": "0",
        "tracer": tracer,
        "tracer_version": "1",
        "model": {"display": display, "slug": slug},
        "framework": "huggingface",
        "device": "auto",
        "mode": "eval",
        "dtype": "auto",
        "options_hash": "0",
        "duration_s": 2.5,
        "phases": {"load": 1.0, "warmup": 0.1, "trace": 1.0, "write": 0.1},
        "peak_rss_bytes": 300 << 20,
        "outputs": [],
    }
    data.update(fields)
    return data


def make_run(
    run_dir: Path, jobs: dict[str, dict[str, Any] | bytes | None], finished: bool = True
) -> Path:
    """``jobs``: key -> status dict, raw status bytes, or None (planned, no status yet)."""
    manifest = {
        "kerneltracer_version": "0.1.0",
        "started_at": "2026-01-01T00:00:00+00:00",
        "finished_at": "2026-01-01T00:10:00+00:00" if finished else None,
        "wall_s": 600.0 if finished else None,
        "interrupted": False if finished else None,
        "jobs": [
            {"key": k, "model": k.split("/")[0], "tracer": k.split("/")[1], "mode": "eval"}
            for k in jobs
        ],
    }
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "run.json").write_bytes(orjson.dumps(manifest))
    for key, st in jobs.items():
        job_dir = run_dir / "jobs" / key
        job_dir.mkdir(parents=True, exist_ok=True)
        (job_dir / "JOB.json").write_text("{}")
        if st is None:
            continue
        (job_dir / "worker.log").write_text("log\n")
        raw = st if isinstance(st, bytes) else orjson.dumps(st)
        (job_dir / "_TRACE_STATUS.json").write_bytes(raw)
    return run_dir


def add_analysis(
    job_dir: Path, name: str, marker: dict[str, Any] | None, files: dict[str, str]
) -> Path:
    """An analysis dir with ``files`` and a record of exactly ``marker``, raw: as an older or
    odd runner may have left it (None: no record at all)."""
    paths = JobPaths(job_dir).analysis(name)
    paths.dir.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        (paths.dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (paths.dir / rel).write_text(text)
    if marker is not None:
        paths.record.write_bytes(orjson.dumps(marker))
    return paths.dir
