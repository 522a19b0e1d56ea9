"""The replay worker: ``python -m kerneltracer.worker.replay.main BATCH.json RESULTS.jsonl``.

Runs each signature of the batch in order and appends one JSON line per signature to
RESULTS (flushed before the next one starts), so when an op kills the process the parent
knows exactly which one did: the first signature without a line.
"""

from __future__ import annotations

import signal
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import orjson

from kerneltracer.process.lifeline import arm_parent_death

# Enough samples for a stable median, and calls per sample so each one is well above
# the timer's resolution for ops of a few microseconds.
_MIN_SAMPLE_NS = 100_000
_MAX_INNER = 1000
_READY = b'{"worker": "ready"}'


def main(argv: list[str]) -> int:
    import importlib

    import torch

    batch = orjson.loads(Path(argv[0]).read_bytes())
    # A replay killed hard (SIGKILL) must not leave a worker stuck in a hanging op.
    parent = batch.get("parent")
    if parent is not None and not arm_parent_death(signal.SIGKILL, parent):
        sys.exit(1)
    for module in batch.get("imports") or []:
        importlib.import_module(module)
    device = torch.device(batch["device"])
    if batch.get("threads"):
        torch.set_num_threads(int(batch["threads"]))
    with open(argv[1], "ab") as out:
        # Start-up (importing torch and the imports) is not the first op's time budget.
        out.write(_READY + b"\n")
        out.flush()
        for item in batch["signatures"]:
            result = replay_one(item, device, int(batch["repeats"]))
            out.write(orjson.dumps(result) + b"\n")
            out.flush()
    return 0


def replay_one(item: dict[str, Any], device: Any, repeats: int) -> dict[str, Any]:
    import torch

    from kerneltracer.worker.replay.tensors import (
        InputError,
        actual_specs,
        apply_constraints,
        build_kwargs,
        build_value,
        resolve_op,
        tensor_specs,
    )

    result: dict[str, Any] = {"sig_id": item["sig_id"]}
    gen = torch.Generator().manual_seed(0)
    try:
        op = resolve_op(item["op"])
        args = build_value(item["inputs"], device, gen)
        kwargs = build_kwargs(item["kwargs"], device, gen)
        apply_constraints(item, args, kwargs, gen)
    except InputError as exc:
        return {**result, "status": "failed", "reason": f"inputs: {exc}"}
    try:
        out = op(*args, **kwargs)
        samples = _time(op, args, kwargs, device, repeats)
    except Exception as exc:  # the op's own error is the result, not a worker failure
        line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return {**result, "status": "failed", "reason": f"{type(exc).__name__}: {line}"[:300]}
    result["time_us"] = statistics.median(samples)
    result["samples"] = len(samples)
    got = actual_specs(out)
    result["got"] = [[shape, dtype] for shape, dtype in got]
    if item.get("outputs") is None:
        return {**result, "status": "ok", "reason": "no recorded outputs to check"}
    want = tensor_specs(item["outputs"])
    if [s for s, _ in got] != [s for s, _ in want]:
        shapes = f"{[s for s, _ in got]} != recorded {[s for s, _ in want]}"
        return {**result, "status": "mismatch", "reason": f"output shapes {shapes}"}
    if [d for _, d in got] != [d for _, d in want]:
        dtypes = f"{[d for _, d in got]} != recorded {[d for _, d in want]}"
        return {**result, "status": "mismatch", "reason": f"output dtypes {dtypes}"}
    return {**result, "status": "ok"}


def _time(op: Any, args: Any, kwargs: Any, device: Any, repeats: int) -> list[float]:
    """Per-call times in microseconds, one per sample (CUDA events on a GPU)."""
    import torch

    cuda = device.type == "cuda"
    once = _sample_cuda if cuda else _sample_cpu
    first = once(op, args, kwargs, 1)
    inner = max(1, min(_MAX_INNER, int(_MIN_SAMPLE_NS / max(first * 1000, 1.0))))
    if cuda:
        torch.cuda.synchronize()
    return [once(op, args, kwargs, inner) / inner for _ in range(repeats)]


def _sample_cpu(op: Any, args: Any, kwargs: Any, inner: int) -> float:
    start = time.perf_counter_ns()
    for _ in range(inner):
        op(*args, **kwargs)
    return (time.perf_counter_ns() - start) / 1000


def _sample_cuda(op: Any, args: Any, kwargs: Any, inner: int) -> float:
    import torch

    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    begin.record()
    for _ in range(inner):
        op(*args, **kwargs)
    end.record()
    end.synchronize()
    return float(begin.elapsed_time(end)) * 1000  # ms -> us


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
