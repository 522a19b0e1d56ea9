"""A synthetic run dir of many models x tracers, for the report's scale test and benches.

Statuses, phase times and outputs are small but real-shaped: every status file validates as
a :class:`~kerneltracer.core.status.TraceStatus`, the dispatch and profiler stand-ins
(:data:`STAND_INS`) have the op tables the coverage reads, and a
deterministic mix of failures, pending jobs and one corrupt status file exercises every state
the report shows. No framework is imported.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from kerneltracer.core.artefacts import ArtefactKind
from kerneltracer.core.layout import JobPaths, RunPaths


# Stand-ins for real tracers: what each writes and how its jobs end.
@dataclass(frozen=True)
class SyntheticTracer:
    name: str
    writes: ArtefactKind  # the artefact its ok jobs get
    flaky: bool = False  # takes part in the deterministic mix of failures
    skipped_for: str | None = None  # always skipped: its exclusive group is satisfied by this
    truncated_status: bool = False  # the third-last model's status file is cut short


STAND_INS = (
    SyntheticTracer("torch_dispatch", ArtefactKind.DISPATCH_SUMMARY),
    SyntheticTracer("torch_profiler", ArtefactKind.KEY_AVERAGES, flaky=True),
    SyntheticTracer("torch_compile", ArtefactKind.GRAPH_TEXT, flaky=True),
    SyntheticTracer("print_fx", ArtefactKind.GRAPH_TEXT, truncated_status=True),
    SyntheticTracer("print_aten", ArtefactKind.GRAPH_TEXT),
    SyntheticTracer("print_aten_export", ArtefactKind.GRAPH_TEXT, skipped_for="print_aten"),
)

SIX_TRACERS = tuple(t.name for t in STAND_INS)
_OP_NAMES = (
    "mm addmm bmm embedding add mul div sub softmax gelu silu tanh layer_norm rms_norm "
    "view reshape transpose permute cat split slice select expand clone copy_ zeros ones "
    "arange where masked_fill rsqrt pow mean sum baddbmm scaled_dot_product_attention "
    "native_layer_norm _to_copy _unsafe_view t unsqueeze squeeze contiguous dropout"
)
_OPS = tuple(f"aten.{name}.default" for name in _OP_NAMES.split())
_FAILURES = {
    17: ("failed", "ValueError: deliberate failure in layer 3"),
    29: ("oom", "MemoryError: tree RSS above the 2.0 GiB ceiling"),
    31: ("timeout", "no result after 900 s"),
    37: ("crashed", "killed by SIGSEGV (-11)"),
}


def make_synthetic_run(
    run_dir: Path,
    n_models: int = 500,
    tracers: tuple[str, ...] = SIX_TRACERS,
    extra_ops: int = 0,
) -> list[str]:
    """Write the run dir; return the job keys in plan order (every one gets a cell).

    Each model runs 8 common ops and one of its own; ``extra_ops`` more (drawn from a pool
    of 400) give the op tables a realistic size for the coverage benchmark.
    """
    by_name = {t.name: t for t in STAND_INS}
    stand_ins = [by_name.get(t, SyntheticTracer(t, ArtefactKind.GRAPH_TEXT)) for t in tracers]
    planned = []
    for i in range(n_models):
        for tracer in stand_ins:
            key = f"{_slug(i)}/{tracer.name}"
            planned.append(
                {"key": key, "model": _display(i), "tracer": tracer.name, "mode": "eval"}
            )
            _write_job(RunPaths(run_dir).job(key).dir, i, tracer, n_models, extra_ops)
    manifest = {
        "kerneltracer_version": "0.1.0",
        "config": "synthetic.yaml",
        "started_at": "2026-01-01T00:00:00.000+00:00",
        "finished_at": "2026-01-01T06:00:00.000+00:00",
        "interrupted": False,
        "wall_s": 21600.0,
        "jobs": planned,
    }
    RunPaths(run_dir).manifest().write_bytes(orjson.dumps(manifest))
    return [job["key"] for job in planned]


def _slug(i: int) -> str:
    return f"org--model-{i:04d}"


def _display(i: int) -> str:
    return f"org/model-{i:04d}"


def _write_job(
    job_dir: Path, i: int, tracer: SyntheticTracer, n_models: int, extra_ops: int
) -> None:
    job_dir.mkdir(parents=True, exist_ok=True)
    JobPaths(job_dir).job_file.write_bytes(orjson.dumps({"key": f"{_slug(i)}/{tracer.name}"}))
    if i >= n_models - 2 and tracer.skipped_for is not None:
        return  # still pending: the run was stopped before these started
    JobPaths(job_dir).worker_log.write_text(f"worker for {_display(i)} / {tracer.name}\n")
    if i == n_models - 3 and tracer.truncated_status:
        JobPaths(job_dir).status.write_bytes(b'{"schema_version": 1, "status": "o')  # truncated
        return
    status, reason = _status_of(i, tracer)
    outputs = _write_outputs(job_dir, i, tracer.writes, extra_ops) if status == "ok" else []
    status_data = _status(i, tracer.name, status, reason, outputs)
    JobPaths(job_dir).status.write_bytes(orjson.dumps(status_data))


def _status_of(i: int, tracer: SyntheticTracer) -> tuple[str, str | None]:
    if tracer.skipped_for is not None:
        return "skipped", f"exclusive group satisfied by {_slug(i)}/{tracer.skipped_for}"
    for modulus, (status, reason) in _FAILURES.items():
        if i % modulus == modulus - 1 and tracer.flaky:
            return status, reason
    return "ok", None


def _write_outputs(
    job_dir: Path, i: int, writes: ArtefactKind, extra_ops: int
) -> list[dict[str, Any]]:
    ops = [_OPS[(i * 7 + k * 3) % len(_OPS)] for k in range(8)] + [f"aten.custom_{i}.default"]
    ops += [f"aten.op{(i * 13 + k) % 400}.default" for k in range(min(extra_ops, 400))]
    files: dict[str, bytes] = {}
    if writes == ArtefactKind.DISPATCH_SUMMARY:
        summary = {
            "ops": {op: {"calls": 1 + (i + n) % 9, "signatures": 1} for n, op in enumerate(ops)}
        }
        files["dispatch_summary.json"] = orjson.dumps(summary)
        files["dispatch_op_counts.csv"] = (
            "op,calls,signatures\n"
            + "".join(f"{op},{v['calls']},1\n" for op, v in summary["ops"].items())
        ).encode()
    elif writes == ArtefactKind.KEY_AVERAGES:
        # The columns the profiler tracer writes (a CPU run: no device time).
        header = (
            "name,input_shapes,calls,cpu_time_total_us,self_cpu_time_total_us,"
            "self_device_time_total_us\n"
        )
        rows = "".join(
            f'{op.replace("aten.", "aten::").rsplit(".", 1)[0]},"[[1, 8]]",2,{10 + n},{5 + n},0\n'
            for n, op in enumerate(ops)
        )
        files["key_averages.csv"] = (header + rows).encode()
    else:
        files["graphs/graph_0.txt"] = "\n".join(
            f"%{n} = {op}()" for n, op in enumerate(ops)
        ).encode()
    return [_put(job_dir, rel, data) for rel, data in files.items()]


def _put(job_dir: Path, rel: str, data: bytes) -> dict[str, Any]:
    path = job_dir / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    st = path.stat()
    return {
        "path": rel,
        "size": st.st_size,
        "sha256": hashlib.sha256(data).hexdigest(),
        "mtime_ns": st.st_mtime_ns,
    }


def _status(
    i: int, tracer: str, status: str, reason: str | None, outputs: list[dict[str, Any]]
) -> dict[str, Any]:
    ran = status not in ("skipped", "unsupported")
    duration = 3.0 + (i * 13 + len(tracer)) % 40 if ran else None
    phases = (
        {"load": duration * 0.5, "warmup": 0.1, "trace": duration * 0.3, "write": 0.05}
        if ran and status == "ok" and duration is not None
        else {}
    )
    model = {"display": _display(i), "slug": _slug(i), "id": _display(i)}
    return {
        "schema_version": 1,
        "status": status,
        "job_key": f"{_slug(i)}/{tracer}",
        "attempt": "synthetic",
        "request": {},
        "request_hash": "0",
        "tracer": tracer,
        "tracer_version": "1",
        "model": model,
        "framework": "huggingface",
        "device": "auto",
        "resolved_device": "cpu" if ran else None,
        "mode": "eval",
        "dtype": "auto",
        "options_hash": "0",
        "started_at": "2026-01-01T00:00:00.000+00:00" if ran else None,
        "finished_at": "2026-01-01T00:01:00.000+00:00",
        "duration_s": duration,
        "phases": phases,
        "peak_rss_bytes": (300 + i % 700) << 20 if ran else None,
        "reason": reason,
        "error": {"type": reason.split(":")[0], "message": reason, "root_cause": reason}
        if status == "failed" and reason
        else None,
        "versions": {"torch": "2.13.0+cpu", "transformers": "5.23.0"} if ran else {},
        "outputs": outputs,
    }
