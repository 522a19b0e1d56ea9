"""Benchmark the record analysis: analyse + every reporter at 1M and 4M records.

Each measurement runs in a fresh child process (so peak RSS is that run's own), several
times; medians are reported. Time must grow linearly: 4M ≤ 4.5× the 1M time.

The peer is ada-pa's own algorithm (re-written in tests/records/naive.py):
its op_statistic rescans every named event for each unnamed one, so it is quadratic; it is
timed against ours on growing logs, interleaved run by run.

    .venv/bin/python bench/bench_records.py                    # 1M and 4M, 3 runs each
    .venv/bin/python bench/bench_records.py --sizes 100000 --repeats 1   # quick check
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def child(mode: str, log: Path, out: Path) -> None:
    """Run one measurement and print it as JSON (in a fresh process)."""
    from kerneltracer.analysis.records import analyse
    from kerneltracer.analysis.records.reporters import REPORTERS
    from kerneltracer.analysis.records.reporters.op_statistic import OpStatisticReporter

    # Wall time and CPU time: the CPU time of this process is less disturbed by the other
    # jobs sharing the machine, so linearity is judged on both.
    times: dict[str, float] = {}
    cpu: dict[str, float] = {}
    t0, c0 = time.perf_counter(), time.process_time()
    if mode == "naive":
        from tests.records.naive import naive_events, naive_op_statistic

        naive_op_statistic(naive_events(log))
    else:
        t, c = time.perf_counter(), time.process_time()
        analysis = analyse(log)
        times["analyse"], cpu["analyse"] = time.perf_counter() - t, time.process_time() - c
        reporters = REPORTERS if mode == "all" else {"op_statistic": OpStatisticReporter}
        for name, cls in reporters.items():
            t, c = time.perf_counter(), time.process_time()
            cls(analysis.pds).report(out / "bench")
            times[name], cpu[name] = time.perf_counter() - t, time.process_time() - c
    times["total"], cpu["total"] = time.perf_counter() - t0, time.process_time() - c0
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"times": times, "cpu": cpu, "peak_mb": peak_mb}))


def measure(mode: str, log: Path, workdir: Path) -> dict[str, object]:
    out = workdir / f"out-{mode}"
    out.mkdir(exist_ok=True)
    cmd = [sys.executable, __file__, "--child", mode, str(log), str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def median_of(runs: list[dict[str, object]], key: str, clock: str = "times") -> float:
    return statistics.median(float(r[clock][key]) for r in runs)  # type: ignore[index]


def bench_scale(sizes: list[int], repeats: int, workdir: Path) -> dict[int, dict[str, float]]:
    from tests.support.record_logs import write_synth_log

    logs = {}
    for n in sizes:
        logs[n] = write_synth_log(workdir / f"ge_{n}.log", n)
    runs: dict[int, list[dict[str, object]]] = {n: [] for n in sizes}
    for _ in range(repeats):
        for n in sizes:  # interleaved, so load on the shared machine hits every size alike
            runs[n].append(measure("all", logs[n], workdir))
    stages = ["analyse", "tracing", "summary", "op_statistic", "anomalies", "total"]
    result: dict[int, dict[str, float]] = {}
    for clock, title in (("times", "wall time"), ("cpu", "CPU time")):
        print(f"\nanalyse + all reporters, {title}, median of {repeats} run(s)")
        print(f"{'records':>10} {'MB log':>7} " + " ".join(f"{s:>12}" for s in stages)
              + f" {'peak MB':>8}")  # fmt: skip
        for n in sizes:
            med = {s: median_of(runs[n], s, clock) for s in stages}
            med["peak_mb"] = statistics.median(float(r["peak_mb"]) for r in runs[n])  # type: ignore[arg-type]
            size_mb = logs[n].stat().st_size / 2**20
            print(
                f"{n:>10} {size_mb:>7.0f} " + " ".join(f"{med[s]:>11.2f}s" for s in stages)
                + f" {med['peak_mb']:>8.0f}"
            )  # fmt: skip
            result[n] = med
        base = sizes[0]
        for n in sizes[1:]:
            ratio = result[n]["total"] / result[base]["total"]
            bound = 4.5 * n / base / 4
            verdict = "ok" if ratio <= bound else "TOO SLOW"
            print(
                f"{title} {n}/{base}: {ratio:.2f}x for {n / base:.1f}x records "
                f"(bound {bound:.2f}x) {verdict}"
            )
        for n in sizes[1:]:
            print(f"peak memory {n}/{base}: {result[n]['peak_mb'] / result[base]['peak_mb']:.2f}x")
    return result


def bench_peer(sizes: list[int], repeats: int, workdir: Path) -> None:
    from tests.support.record_logs import write_synth_log

    logs = {n: write_synth_log(workdir / f"peer_{n}.log", n) for n in sizes}
    ours: dict[int, list[float]] = {n: [] for n in sizes}
    naive: dict[int, list[float]] = {n: [] for n in sizes}
    for _ in range(repeats):
        for n in sizes:
            ours[n].append(median_of([measure("op_statistic", logs[n], workdir)], "total"))
            naive[n].append(median_of([measure("naive", logs[n], workdir)], "total"))
    print(f"\nop_statistic vs ada-pa's algorithm (analyse included), median of {repeats}")
    print(f"{'records':>10} {'ours':>9} {'ada-pa':>9} {'ada-pa/ours':>12}")
    for n in sizes:
        o, p = statistics.median(ours[n]), statistics.median(naive[n])
        print(f"{n:>10} {o:>8.3f}s {p:>8.3f}s {p / o:>11.1f}x")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 4_000_000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--peer-sizes", type=int, nargs="*", default=[20_000, 40_000, 80_000])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_records_") as tmp:
        workdir = Path(tmp)
        bench_scale(sorted(args.sizes), args.repeats, workdir)
        if args.peer_sizes:
            bench_peer(sorted(args.peer_sizes), args.repeats, workdir)


if __name__ == "__main__":
    main()
