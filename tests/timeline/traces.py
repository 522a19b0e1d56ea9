"""Helpers for timeline tests: the real HTA traces and small synthetic chrome traces."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

GPU_TRACES = {
    "amd": "amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "call_stack": "call_stack/backward_thread.json",
    "alexnet": "critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
    "event_sync": "critical_path/cuda_event_sync/event_sync_trace.json.gz",
    "nccl": "nccl_parser_config/nccl_data.json.gz",
    "rank0_16": "negative_queue_length_values_check/rank0.json.gz",
    "compare_base": "trace_compare/base/base.json.gz",
    "compare_test": "trace_compare/test/test.json.gz",
    "legacy": "trace_file_list/inference_rank_1.json.gz",
    "triton": "triton_example/triton_example.json.gz",
}
CPU_TRACES = {
    "cpu_only": "cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
    "rank_unavailable": "rank_unavailable/rank_not_found.json.gz",
    "distributed_info_unavailable": (
        "distributed_info_unavailable/distributed_info_not_found.json.gz"
    ),
}
ALL_TRACES = {**GPU_TRACES, **CPU_TRACES}


def hta_path(testdata: Path, key: str) -> Path:
    return testdata / "hta" / ALL_TRACES[key]


def x(
    name: str, cat: str, ts: float, dur: float, tid: int = 1, pid: int = 1, **args: Any
) -> dict[str, Any]:
    event: dict[str, Any] = {
        "ph": "X",
        "cat": cat,
        "name": name,
        "pid": pid,
        "tid": tid,
        "ts": ts,
        "dur": dur,
    }
    if args:
        event["args"] = args
    return event


def kernel(
    name: str, ts: float, dur: float, stream: int = 7, corr: int = -1, **args: Any
) -> dict[str, Any]:
    return x(
        name,
        "kernel",
        ts,
        dur,
        tid=stream,
        pid=0,
        stream=stream,
        correlation=corr,
        device=0,
        **args,
    )


def memcpy(
    direction: str, ts: float, dur: float, stream: int = 7, nbytes: int = 1 << 20
) -> dict[str, Any]:
    name = (
        f"Memcpy {direction} (Pageable -> Device)" if direction == "HtoD" else f"Memcpy {direction}"
    )
    return x(name, "gpu_memcpy", ts, dur, tid=stream, pid=0, stream=stream, device=0, bytes=nbytes)


def write_trace(
    path: Path, events: list[dict[str, Any]], *, kineto_layout: bool = True, **meta: Any
) -> Path:
    """A chrome trace as Kineto writes it: one key per line, one event per block."""
    if kineto_layout:
        # json, not orjson: tests write ids beyond 64 bits on purpose.
        body = ",\n".join("  " + json.dumps(e) for e in events)
        head = "".join(f'  "{k}": {json.dumps(v)},\n' for k, v in meta.items())
        text = "{\n" + head + '  "traceEvents": [\n' + body + "\n  ],\n" + '  "traceName": "t"\n}\n'
        data = text.encode()
    else:
        data = json.dumps({**meta, "traceEvents": events}, separators=(",", ":")).encode()
    if path.name.endswith(".gz"):
        data = gzip.compress(data)
    path.write_bytes(data)
    return path


def timeline_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``kerneltracer timeline ARGS`` as a user runs it, from the repository root."""
    from tests.conftest import REPO_ROOT

    return subprocess.run(
        [sys.executable, "-m", "kerneltracer.cli.main", "timeline", *args],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=300,
    )
