"""A big chrome trace (3M events by default) through ``kerneltracer timeline``: wall, CPU and
peak RSS of the process tree (issue 42: ≤ 30 s, ≤ 300 MiB, whatever the input size).

The trace is a real Kineto trace of the test data (rank0.json.gz: GPU kernels, runtime
launch calls, ac2g flows, host ops with shapes, user annotations) repeated back to back,
shifted in time with fresh correlation ids, written as a stream (never all in memory) and
gzipped. Each side runs in a fresh process, medians of ``--runs``:

- ``load``: ``load_chrome_trace(op_args=True)`` alone (what every analysis starts with);
- ``cli``: the default ``kerneltracer timeline TRACE -o OUT`` (all reports, the InferScope
  file, op attribution), the forked writer's CPU included.

    .venv/bin/python bench/bench_big_trace.py                      # 3M events, 1 run
    .venv/bin/python bench/bench_big_trace.py --events 1000000 --runs 3 --keep /tmp/t.json.gz

Peak RSS sums the tree's processes, so the forked InferScope writer's pages shared with
its parent are counted twice (an upper bound); peak PSS shares them out (each page counted
once), the tree's real footprint. The 1-minute load average is printed.
"""

from __future__ import annotations

import argparse
import gzip
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_timeline import LARGEST, REPO, _run

_LOAD = (
    "import json, sys; from kerneltracer.analysis.timeline.load.loader import load_chrome_trace; "
    "t = load_chrome_trace(sys.argv[1], op_args=True); print(json.dumps({'rows': len(t)}))"
)


def make_big(src: Path, target_events: int, dest: Path) -> int:
    """Write ``src``'s events repeated to ``target_events`` into ``dest``; the count."""
    doc = orjson.loads(gzip.decompress(src.read_bytes()))
    events: list[dict[str, Any]] = doc.pop("traceEvents")
    timed = [e for e in events if isinstance(e.get("ts"), int | float)]
    span = max(e["ts"] + e.get("dur", 0) for e in timed) - min(e["ts"] for e in timed) + 1000
    corr_step = 1 + max(
        (e["args"].get("correlation", 0) for e in events if isinstance(e.get("args"), dict)),
        default=0,
    )
    written = 0
    with gzip.open(dest, "wb", compresslevel=1) as out:
        out.write(b"{" + orjson.dumps(doc)[1:-1] + b',\n"traceEvents": [\n')
        sep = b""
        k = 0
        while written < target_events:
            lines = []
            for e in events:
                if k and e.get("ph") == "M":
                    continue
                e2 = dict(e)
                if isinstance(e2.get("ts"), int | float):
                    e2["ts"] = e2["ts"] + k * span
                args = e2.get("args")
                corr = args.get("correlation") if isinstance(args, dict) else None
                if k and isinstance(corr, int) and corr >= 0:
                    e2["args"] = {**args, "correlation": corr + k * corr_step}
                if k and e2.get("ph") in ("s", "f") and isinstance(e2.get("id"), int):
                    e2["id"] = e2["id"] + k * corr_step
                lines.append(b"  " + orjson.dumps(e2))
                written += 1
                if written >= target_events:
                    break
            out.write(sep + b",\n".join(lines))
            sep = b",\n"
            k += 1
        out.write(b"\n]}\n")
    return written


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--events", type=int, default=3_000_000)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--keep", type=Path, help="write the trace here (reused if it exists)")
    ap.add_argument("--sides", default="load,cli", help="comma-separated: load, cli")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_big_") as tmp:
        trace = args.keep or Path(tmp) / "big.json.gz"
        if not trace.exists():
            n = make_big(LARGEST, args.events, trace)
            print(f"wrote {trace}: {n} events, {trace.stat().st_size >> 20} MiB", file=sys.stderr)
        results: dict[str, list[dict[str, Any]]] = {}
        for _ in range(args.runs):
            for side in args.sides.split(","):
                if side == "load":
                    cmd = [sys.executable, "-c", _LOAD, str(trace)]
                else:
                    out = Path(tmp) / "out"
                    cmd = [sys.executable, "-m", "kerneltracer.cli.main", "timeline"]
                    cmd += [str(trace), "-o", str(out)]
                r = _run(cmd, side, trace, REPO)
                results.setdefault(side, []).append(r)
                print(
                    f"  {side:4s} wall {r['wall_s']:.1f}s cpu {r['cpu_s']:.1f}s "
                    f"peak {r['peak_rss_mb']:.0f} MiB (PSS {r['peak_pss_mb']:.0f} MiB)",
                    file=sys.stderr,
                )
    for side, rows in results.items():
        med = {k: statistics.median(r[k] for r in rows) for k in ("wall_s", "cpu_s")}
        peak = max(r["peak_rss_mb"] for r in rows)
        pss = max(r["peak_pss_mb"] for r in rows)
        print(
            f"{side:4s} {args.events:>9,d} events: wall {med['wall_s']:.1f} s, "
            f"CPU {med['cpu_s']:.1f} s, peak RSS {peak:.0f} MiB (tree), PSS {pss:.0f} MiB"
        )
    print(f"1-minute load average: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
