"""Benchmark `kerneltracer report` on a synthetic 500 models x 6 tracers run dir.

Each measurement is a fresh `kerneltracer report` process (CLI start-up included, what a
user waits for), timed with its peak RSS from /usr/bin/time -v. The reference is
`kerneltracer status RUN --json` on the same run dir: it reads the same 3000 status files
and prints them, so report / status says what the rendering costs beyond reading. The two
are interleaved run by run; medians are printed, with the page sizes of the report.

    .venv/bin/python bench/bench_report.py                 # 500 x 6, 3 runs each
    .venv/bin/python bench/bench_report.py --models 50 --repeats 1
    .venv/bin/python bench/bench_report.py --analyze runs/demo   # analyze -j 1 vs -j NCPU
    .venv/bin/python bench/bench_report.py --demo runs/demo      # report of the demo run

With ``--demo RUN_DIR`` it times `kerneltracer report` on a copy of that run (after `make
demo`: 24 jobs, analyses and readiness) and prints the size of every page and how many
charts each draws (the charts are inline SVG, so their bytes are in the pages' sizes).

With ``--analyze RUN_DIR`` it times `kerneltracer analyze --force` on a copy of that run,
serial (-j 1) against one worker process per CPU (-j NCPU), interleaved.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

KT = [sys.executable, "-m", "kerneltracer.cli.main"]


def timed(args: list[str]) -> tuple[float, float]:
    """(wall seconds, peak RSS MiB) of one CLI run."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        ["/usr/bin/time", "-v", *KT, *args], capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{proc.stderr[-2000:]}")
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    return wall, int(rss.group(1)) / 1024 if rss else float("nan")


def sizes(report: Path) -> dict[str, float | int]:
    models = list((report / "models").glob("*.html"))
    model_sizes = [p.stat().st_size for p in models]
    pages = [report / n for n in ("index.html", "coverage.html", "readiness.html")]
    out: dict[str, float | int] = {}
    for page in pages:
        out[f"{page.name} KiB"] = page.stat().st_size / 1024
        out[f"{page.name} charts"] = page.read_text().count('<svg class="chart')
    out["model pages"] = len(models)
    out["model page median KiB"] = statistics.median(model_sizes) / 1024
    out["model page charts (median)"] = statistics.median(
        p.read_text().count('<svg class="chart') for p in models
    )
    everything = sum(model_sizes) + sum(p.stat().st_size for p in pages)
    out["all HTML MiB"] = everything / (1 << 20)
    return out


def print_sizes(report: Path) -> None:
    for name, value in sizes(report).items():
        shown = f"{value:,.1f}" if isinstance(value, float) else str(value)
        print(f"  {name:<28} {shown}")


def bench_demo(run_dir: Path, repeats: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-demo-") as tmp:
        run = Path(tmp) / "run"
        shutil.copytree(run_dir, run)
        runs = [timed(["report", str(run)]) for _ in range(repeats)]
        listed = ", ".join(f"{w:.2f}" for w, _ in runs)
        print(
            f"kerneltracer report (demo {run_dir}): median "
            f"{statistics.median(w for w, _ in runs):.2f}s  peak RSS "
            f"{statistics.median(r for _, r in runs):.0f} MiB  (runs: {listed})"
        )
        print_sizes(run / "report")


def bench_analyze(run_dir: Path, repeats: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-analyze-") as tmp:
        run = Path(tmp) / "run"
        shutil.copytree(run_dir, run, ignore=shutil.ignore_patterns("report"))
        serial, parallel = [], []
        cpus = len(os.sched_getaffinity(0))
        for _ in range(repeats):
            serial.append(timed(["analyze", str(run), "--force", "-j", "1"]))
            parallel.append(timed(["analyze", str(run), "--force", "-j", str(cpus)]))
        s, p = (statistics.median(w for w, _ in runs) for runs in (serial, parallel))
        for label, runs, med in (("1", serial, s), (str(cpus), parallel, p)):
            listed = ", ".join(f"{w:.2f}" for w, _ in runs)
            print(f"analyze -j {label}: median {med:.2f}s  (runs: {listed})")
        print(f"serial / parallel: {s / p:.2f}x on {cpus} CPUs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--analyze", type=Path, metavar="RUN_DIR", default=None)
    parser.add_argument("--demo", type=Path, metavar="RUN_DIR", default=None)
    args = parser.parse_args()
    if args.analyze is not None:
        bench_analyze(args.analyze, args.repeats)
        return
    if args.demo is not None:
        bench_demo(args.demo, args.repeats)
        return
    from tests.support.synthetic_run import SIX_TRACERS, make_synthetic_run

    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        run = Path(tmp) / "run"
        t0 = time.perf_counter()
        make_synthetic_run(run, n_models=args.models)
        print(
            f"synthetic run: {args.models} models x {len(SIX_TRACERS)} tracers "
            f"({time.perf_counter() - t0:.1f}s to generate)"
        )
        report_runs, status_runs = [], []
        for _ in range(args.repeats):
            report_runs.append(timed(["report", str(run)]))
            status_runs.append(timed(["status", str(run), "--json"]))
        rep_t = statistics.median(w for w, _ in report_runs)
        st_t = statistics.median(w for w, _ in status_runs)
        print(
            f"kerneltracer report      median {rep_t:6.2f}s  peak RSS "
            f"{statistics.median(r for _, r in report_runs):6.0f} MiB  "
            f"(runs: {', '.join(f'{w:.2f}' for w, _ in report_runs)})"
        )
        print(
            f"kerneltracer status --json median {st_t:6.2f}s  peak RSS "
            f"{statistics.median(r for _, r in status_runs):6.0f} MiB"
        )
        print(f"report / status: {rep_t / st_t:.1f}x   (budget: report under 60 s)")
        print_sizes(run / "report")


if __name__ == "__main__":
    main()
