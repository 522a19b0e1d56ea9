"""Op → kernel attribution vs traceinsight (HTA) 0.6.1: time and peak RSS.

Three sides, each in a fresh interpreter (imports included), interleaved with the order
rotated every run, medians reported; the runner (wall, CPU of the whole process tree, peak
RSS sampled every 10 ms) is bench_timeline's:

- ``ops``: our load with op args + attribution + per-op table with the roofline
  (everything behind ops.csv / kernels_by_op.csv, without writing them);
- ``base``: our plain load + kernel breakdown (what the timeline did before attribution);
- ``hta``: traceinsight's TraceAnalysis load + GPU kernel breakdown (its per-kernel launch
  stats, the figure the parity test compares, timed apart as ``launch_stats_s``).

    .venv/bin/python bench/bench_attribution.py                 # largest testdata trace
    .venv/bin/python bench/bench_attribution.py --runs 5 --events 1000000 --json out.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_timeline import LARGEST, _count_events, _run, make_repeated

SIDES = ("ops", "base", "hta")


def _worker_ops(path: str) -> dict[str, Any]:
    t0 = time.perf_counter()
    from kerneltracer.analysis.timeline.analyses.ops import compute_ops
    from kerneltracer.analysis.timeline.load.loader import load_chrome_trace

    t1 = time.perf_counter()
    trace = load_chrome_trace(path, op_args=True)
    t2 = time.perf_counter()
    result = compute_ops(trace)
    t3 = time.perf_counter()
    a = result.attribution
    return {
        "import_s": t1 - t0,
        "load_s": t2 - t1,
        "attribution_s": t3 - t2,
        "analysis_s": t3 - t1,
        "gpu_events": int(a.rows.size),
        "attributed_share": a.attributed_share,
        "op_rows": len(result.table.rows),
    }


def _worker_base(path: str) -> dict[str, Any]:
    t0 = time.perf_counter()
    from kerneltracer.analysis.timeline.analyses.gpu_breakdown import (
        kernel_breakdown,
        select_gpu_work,
    )
    from kerneltracer.analysis.timeline.load.loader import load_chrome_trace

    t1 = time.perf_counter()
    trace = load_chrome_trace(path)
    kernel_breakdown(select_gpu_work(trace), trace.names)
    t2 = time.perf_counter()
    return {"import_s": t1 - t0, "analysis_s": t2 - t1}


def _worker_hta(path: str) -> dict[str, Any]:
    import logging

    t0 = time.perf_counter()
    from hta.trace_analysis import TraceAnalysis

    logging.getLogger("hta").setLevel(logging.ERROR)
    t1 = time.perf_counter()
    p = Path(path)
    analysis = TraceAnalysis(trace_files={0: p.name}, trace_dir=str(p.parent))
    analysis.get_gpu_kernel_breakdown(visualize=False, include_memory_kernels=True)
    t2 = time.perf_counter()
    stats = analysis.get_cuda_kernel_launch_stats(visualize=False)[0]
    t3 = time.perf_counter()
    return {
        "import_s": t1 - t0,
        "analysis_s": t2 - t1,
        "launch_stats_s": t3 - t2,
        "launch_rows": len(stats),
    }


WORKERS = {"ops": _worker_ops, "base": _worker_base, "hta": _worker_hta}


def bench(trace: Path, runs: int) -> dict[str, Any]:
    rows: dict[str, list[dict[str, Any]]] = {side: [] for side in SIDES}
    for i in range(runs):
        order = SIDES[i % 3 :] + SIDES[: i % 3]
        for side in order:
            r = _run([sys.executable, __file__, "--worker", side, str(trace)], side, trace)
            rows[side].append(r)
            print(
                f"  run {i + 1} {side:4s} wall {r['wall_s']:.2f}s cpu {r['cpu_s']:.2f}s "
                f"analysis {r['analysis_s']:.2f}s peak {r['peak_rss_mb']:.0f} MB",
                file=sys.stderr,
            )

    def med(side: str, key: str) -> float:
        return statistics.median(r[key] for r in rows[side])

    summary: dict[str, Any] = {
        "trace": trace.name,
        "events": _count_events(trace),
        "runs": runs,
        "gpu_events": rows["ops"][0]["gpu_events"],
        "attributed_share": rows["ops"][0]["attributed_share"],
    }
    keys = ("wall_s", "cpu_s", "analysis_s", "import_s", "peak_rss_mb")
    for side in SIDES:
        summary[side] = {k: med(side, k) for k in keys}
    summary["ops"]["load_s"] = med("ops", "load_s")
    summary["ops"]["attribution_s"] = med("ops", "attribution_s")
    summary["hta"]["launch_stats_s"] = med("hta", "launch_stats_s")
    summary["speedup_analysis_vs_hta"] = summary["hta"]["analysis_s"] / summary["ops"]["analysis_s"]
    summary["rss_ratio_vs_hta"] = summary["ops"]["peak_rss_mb"] / summary["hta"]["peak_rss_mb"]
    summary["ops_over_base"] = summary["ops"]["analysis_s"] / summary["base"]["analysis_s"]
    return summary


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--worker", nargs=2, metavar=("SIDE", "TRACE"), help=argparse.SUPPRESS)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--events", type=int, default=0, help="also a repeated trace this large")
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args()
    if args.worker:
        side, path = args.worker
        sys.stdout.write(json.dumps(WORKERS[side](path)) + "\n")
        return
    if not LARGEST.is_file():
        raise SystemExit(f"test data not found: {LARGEST} (set KT_TESTDATA)")
    results = []
    with tempfile.TemporaryDirectory(prefix="bench_attribution_") as tmp:
        traces = [LARGEST]
        if args.events:
            traces.append(make_repeated(LARGEST, args.events, Path(tmp) / "repeated.json.gz"))
        for trace in traces:
            print(f"{trace.name}:", file=sys.stderr)
            results.append(bench(trace, args.runs))
    print(
        f"{'trace':22s} {'events':>8s} {'ops s':>7s} {'(attr s)':>8s} {'base s':>7s} "
        f"{'HTA s':>7s} {'vs HTA':>7s} {'ops cpu':>7s} {'HTA cpu':>7s} {'ops MB':>7s} "
        f"{'HTA MB':>7s} {'share':>6s}"
    )
    for s in results:
        print(
            f"{s['trace'][:22]:22s} {s['events']:8d} {s['ops']['analysis_s']:7.2f} "
            f"{s['ops']['attribution_s']:8.2f} {s['base']['analysis_s']:7.2f} "
            f"{s['hta']['analysis_s']:7.2f} {s['speedup_analysis_vs_hta']:6.1f}x "
            f"{s['ops']['cpu_s']:7.2f} {s['hta']['cpu_s']:7.2f} "
            f"{s['ops']['peak_rss_mb']:7.0f} {s['hta']['peak_rss_mb']:7.0f} "
            f"{100 * (s['attributed_share'] or 0):5.1f}%"
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
