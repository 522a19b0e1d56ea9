"""Synthetic run dirs for the coverage and diff tests: real status files, small outputs."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from kerneltracer.core.layout import job_key
from kerneltracer.core.status import JobStatus, TraceStatus, describe_output, write_status
from kerneltracer.jsonio import atomic_write_json

PROFILER_COLUMNS = [
    "name",
    "input_shapes",
    "calls",
    "cpu_time_total_us",
    "self_cpu_time_total_us",
    "device_time_total_us",
    "self_device_time_total_us",
]


def make_job(
    run_dir: Path,
    model: str,
    tracer: str,
    files: dict[str, str | bytes],
    status: str = "ok",
    reason: str | None = None,
    mode: str = "eval",
    slug: str | None = None,
    phase: str = "prefill",
) -> Path:
    """A job dir with ``files`` and a schema-valid status listing them as outputs."""
    slug = slug or "".join(c if c.isalnum() or c in "._-" else "-" for c in model)
    key = job_key(slug, tracer, mode, phase)
    job_dir = run_dir / "jobs" / key
    job_dir.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        data = content.encode() if isinstance(content, str) else content
        (job_dir / name).write_bytes(data)
    fields: dict[str, Any] = {
        "status": JobStatus(status),
        "job_key": key,
        "attempt": "synthetic",
        "request": {"tracer": tracer},
        "request_hash": "0" * 16,
        "tracer": tracer,
        "tracer_version": "1",
        "model": {"display": model, "slug": slug},
        "framework": "vllm" if tracer == "vllm_profiler" else "huggingface",
        "device": "cpu",
        "mode": mode,
        "phase": phase,
        "dtype": "auto",
        "options_hash": "0" * 16,
        "reason": reason,
        "outputs": [describe_output(job_dir, name) for name in files if status == "ok"],
    }
    if status not in ("ok", "skipped", "unsupported"):
        fields["error"] = {"type": "RuntimeError", "message": reason or "", "root_cause": reason}
    write_status(job_dir, TraceStatus.model_validate(fields))
    return job_dir


def dispatch_files(ops: dict[str, tuple[int, int]]) -> dict[str, str | bytes]:
    """torch_dispatch outputs for ``op -> (calls, signatures)``, as the tracer writes them."""
    summary = {
        "total_calls": sum(c for c, _ in ops.values()),
        "unique_ops": len(ops),
        "ops": {op: {"calls": c, "signatures": s} for op, (c, s) in ops.items()},
    }
    counts = "op,calls,signatures\n" + "".join(f"{op},{c},{s}\n" for op, (c, s) in ops.items())
    return {"dispatch_summary.json": json.dumps(summary), "dispatch_op_counts.csv": counts}


def profiler_files(rows: list[tuple[str, str, int, float, float]]) -> dict[str, str | bytes]:
    """key_averages.csv from ``(name, input_shapes, calls, self_cpu_us, self_device_us)``."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(PROFILER_COLUMNS)
    for name, shapes, calls, cpu, dev in rows:
        writer.writerow([name, shapes, calls, cpu, cpu, dev, dev])
    return {"key_averages.csv": buf.getvalue()}


def fail_job(job_dir: Path, reason: str, status: str = "failed") -> None:
    """Rewrite an ok job's status as a failure, the way the orchestrator records one."""
    st = TraceStatus.model_validate_json((job_dir / "_TRACE_STATUS.json").read_bytes())
    err = {"type": "RuntimeError", "message": reason, "root_cause": reason, "phase": "trace"}
    failed = st.model_copy(
        update={"status": JobStatus(status), "reason": reason, "outputs": [], "exit_code": 1}
    )
    data = failed.model_dump(mode="json")
    data["error"] = err
    write_status(job_dir, TraceStatus.model_validate(data))


def remove_dispatch_op(job_dir: Path, op: str) -> None:
    """Drop ``op`` from every torch_dispatch output of a job, keeping them consistent."""
    summary_path = job_dir / "dispatch_summary.json"
    summary = json.loads(summary_path.read_text())
    removed = summary["ops"].pop(op)
    if "total_calls" in summary:
        summary["total_calls"] -= removed["calls"]
    if "unique_ops" in summary:
        summary["unique_ops"] -= 1
    if "unique_signatures" in summary:
        summary["unique_signatures"] -= removed["signatures"]
    atomic_write_json(summary_path, summary)
    counts = job_dir / "dispatch_op_counts.csv"
    if counts.exists():
        lines = counts.read_text().splitlines(keepends=True)
        counts.write_text("".join(ln for ln in lines if not ln.startswith(f"{op},")))
    ops_jsonl = job_dir / "dispatch_ops.jsonl"
    if ops_jsonl.exists():
        rows = [ln for ln in ops_jsonl.read_text().splitlines(keepends=True) if ln.strip()]
        ops_jsonl.write_text("".join(r for r in rows if json.loads(r)["op"] != op))
