"""Synthetic GE-style record logs, for benchmarks and scale tests (not for real analysis).

Each op is an ``OpExecute`` of a named node holding unnamed UpdateShape / Tiling /
KernelLaunch events; every ``atomic_every``-th op has the atomic shape (a Tiling wrapper
and a KernelLaunch wrapper, each of two unnamed events) and every op's kernel runs as a
``Compute`` event on the device. Threads take ops in turn on one global clock.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

_Line = tuple[int, str, str, str]
RECORDS_PER_OP = 10  # normal op: 4 host events + 1 device event
RECORDS_PER_ATOMIC_OP = 18  # + a Tiling wrapper and a KernelLaunch wrapper of two each


def synth_lines(
    n_records: int, *, threads: int = 4, seed: int = 0, atomic_every: int = 10
) -> Iterator[str]:
    """Whole ops until at least ``n_records`` records, inside one dump."""
    rng = random.Random(seed)
    t = 1_763_790_000_000_000_000

    def is_atomic(op: int) -> bool:
        return atomic_every > 0 and op % atomic_every == atomic_every - 1

    ops = total = 0
    while total < n_records:
        total += RECORDS_PER_ATOMIC_OP if is_atomic(ops) else RECORDS_PER_OP
        ops += 1
    yield f"Profiler version: 1.0, dump start, records num: {total}\n"
    for op in range(ops):
        tid = 4000 + op % threads
        node = f"[Op{op % 997}]"
        atomic = is_atomic(op)
        lines: list[_Line] = []

        def ev(node_tok: str, event: str, dur: int, lines: list[_Line] = lines) -> None:
            nonlocal t
            lines.append((t, node_tok, event, "Start"))
            t += dur
            lines.append((t, node_tok, event, "End"))
            t += rng.randint(50, 400)

        lines.append((t, node, "[OpExecute]", "Start"))
        t += 200
        ev("UNKNOWN(-1)", "[UpdateShape]", rng.randint(500, 3000))
        if atomic:
            outer = t
            t += 100
            ev("UNKNOWN(-1)", "[Tiling]", rng.randint(2000, 20000))
            ev("UNKNOWN(-1)", "[Tiling]", rng.randint(2000, 20000))
            lines.append((outer, node, "[Tiling]", "Start"))
            lines.append((t, node, "[Tiling]", "End"))
            t += 100
            outer = t
            t += 100
            ev("UNKNOWN(-1)", "[KernelLaunch]", rng.randint(1000, 8000))
            ev("UNKNOWN(-1)", "[KernelLaunch]", rng.randint(1000, 8000))
            lines.append((outer, node, "[KernelLaunch]", "Start"))
            lines.append((t, node, "[KernelLaunch]", "End"))
        else:
            ev("UNKNOWN(-1)", "[Tiling]", rng.randint(2000, 20000))
            ev("UNKNOWN(-1)", "[KernelLaunch]", rng.randint(1000, 8000))
        compute_start = t - 500
        lines.append((t, node, "[OpExecute]", "End"))
        lines.append((compute_start, node, "[Compute]", "Start"))
        # The device runs one kernel at a time, done before the next op starts: the file
        # stays in time order, like a real dump.
        lines.append((compute_start + rng.randint(200, 600), node, "[Compute]", "End"))
        t += rng.randint(700, 1500)
        lines.sort(key=lambda x: x[0])  # stable: same-time records keep their order
        for ts, node_tok, event, et in lines:
            yield f"{ts} {tid} {node_tok} {event} {et}\n"
    yield "Profiling dump end\n"


def write_synth_log(path: Path, n_records: int, **kwargs: int) -> Path:
    with open(path, "w", encoding="utf-8") as fh:
        batch: list[str] = []
        for line in synth_lines(n_records, **kwargs):
            batch.append(line)
            if len(batch) >= 100_000:
                fh.writelines(batch)
                batch.clear()
        fh.writelines(batch)
    return path
