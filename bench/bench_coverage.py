"""Coverage and diff on a synthetic run of 500 models x 6 tracers, against pandas by hand.

The synthetic run is the report's (tests.support.synthetic_run): real status files for 3000
jobs, per model a torch_dispatch job and a torch_profiler job with ~80 ops each and four
other tracers with a small output; some jobs failed, two are pending and one status file
is corrupt, as in a real batch. Measured, each in a fresh
subprocess (time = wall time of the work after imports, peak RSS of the process), ours and
the peer's interleaved:

- ours:   build_coverage + write_coverage (long CSV, Parquet, matrix CSV, summary JSON);
- pandas: what a user writes by hand for the same files: read every status with json,
          read_csv the ok jobs' dispatch_op_counts.csv / key_averages.csv, concat, groupby,
          to_csv + to_parquet + a pivot_table to CSV;
- diff:   diff_runs + write_diff of the run against a copy with 5 models changed.

Usage: python bench/bench_coverage.py [--models 500] [--repeat 5]
Results are printed and written to bench/out/coverage.json.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.support.synthetic_run import SIX_TRACERS, make_synthetic_run  # noqa: E402

EXTRA_OPS = 72  # with the 9 every model has: ~80 ops per op table


def child_ours(run: Path, out: Path) -> None:
    from kerneltracer.coverage import build_coverage, write_coverage

    write_coverage(build_coverage(run), out)


def child_pandas(run: Path, out: Path) -> None:
    import pandas as pd

    frames = []
    for status_path in sorted(run.glob("jobs/*/*/_TRACE_STATUS.json")):
        try:
            st = json.loads(status_path.read_text())
        except ValueError:
            continue  # a truncated status file: a careful script skips it too
        if st["status"] != "ok" or st["tracer"] not in ("torch_dispatch", "torch_profiler"):
            continue
        model = st["model"]["display"]
        if st["tracer"] == "torch_dispatch":
            df = pd.read_csv(status_path.parent / "dispatch_op_counts.csv")
            df = df.assign(model=model, source="torch_dispatch", self_time_us=float("nan"))
        else:
            df = pd.read_csv(status_path.parent / "key_averages.csv")
            df = df[~df["name"].str.startswith("ProfilerStep")]
            df = df.groupby("name", as_index=False).agg(
                calls=("calls", "sum"), self_time_us=("self_cpu_time_total_us", "sum")
            )
            df = df.rename(columns={"name": "op"}).assign(model=model, source="torch_profiler")
        frames.append(df)
    long = pd.concat(frames, ignore_index=True)
    long["signatures"] = long["signatures"].astype("Int64")
    long = long[["op", "model", "source", "calls", "signatures", "self_time_us"]]
    out.mkdir(parents=True, exist_ok=True)
    long.to_csv(out / "coverage.csv", index=False)
    long.to_parquet(out / "coverage.parquet")
    dispatch = long[long["source"] == "torch_dispatch"]
    dispatch.pivot_table(index="op", columns="model", values="calls", fill_value=0).to_csv(
        out / "coverage_matrix.csv"
    )


def child_diff(run_a: Path, run_b: Path, out: Path) -> None:
    from kerneltracer.coverage.diff import diff_runs
    from kerneltracer.coverage.diff_html import write_diff

    write_diff(diff_runs(run_a, run_b), out)


def _child(argv: list[str]) -> None:
    kind, *paths = argv
    args = [Path(p) for p in paths]
    # Imports before the clock: we time the work, and pandas/pyarrow imports are not it.
    import pandas  # noqa: F401
    import pyarrow.parquet  # noqa: F401

    t0 = time.perf_counter()
    {"ours": child_ours, "pandas": child_pandas, "diff": child_diff}[kind](*args)
    took = time.perf_counter() - t0
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": took, "peak_rss_mb": rss_mb}))


def _measure(kind: str, *paths: Path) -> dict[str, float]:
    proc = subprocess.run(
        [sys.executable, __file__, "--child", kind, *map(str, paths)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _edit_copy(run: Path, copy: Path, n_models: int) -> None:
    from tests.coverage.synth import fail_job, remove_dispatch_op

    shutil.copytree(run, copy)
    for i in range(5):
        job = copy / "jobs" / f"org--model-{i * 97 % n_models:04d}"
        if json.loads((job / "torch_profiler/_TRACE_STATUS.json").read_text())["status"] == "ok":
            fail_job(job / "torch_profiler", "RuntimeError: edited")
        summary = json.loads((job / "torch_dispatch/dispatch_summary.json").read_text())
        remove_dispatch_op(job / "torch_dispatch", next(iter(summary["ops"])))


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _child(sys.argv[2:])
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    results: dict[str, list[dict[str, float]]] = {"ours": [], "pandas": [], "diff": []}
    with tempfile.TemporaryDirectory() as tmp:
        run, copy = Path(tmp) / "run", Path(tmp) / "run-b"
        t0 = time.perf_counter()
        make_synthetic_run(run, args.models, extra_ops=EXTRA_OPS)
        _edit_copy(run, copy, args.models)
        print(
            f"synthetic run: {args.models} models x {len(SIX_TRACERS)} tracers "
            f"({time.perf_counter() - t0:.1f}s to build)"
        )
        for i in range(args.repeat):
            results["ours"].append(_measure("ours", run, Path(tmp) / f"ours{i}"))
            results["pandas"].append(_measure("pandas", run, Path(tmp) / f"pandas{i}"))
            results["diff"].append(_measure("diff", run, copy, Path(tmp) / f"diff{i}"))
        sizes = {p.name: p.stat().st_size for p in (Path(tmp) / "ours0").iterdir()}
        diff_sizes = {p.name: p.stat().st_size for p in (Path(tmp) / "diff0").iterdir()}
    summary = {
        kind: {
            "median_s": statistics.median(r["seconds"] for r in runs),
            "runs_s": [round(r["seconds"], 3) for r in runs],
            "peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
        }
        for kind, runs in results.items()
    }
    summary["ratio_ours_over_pandas"] = summary["ours"]["median_s"] / summary["pandas"]["median_s"]
    summary["coverage_file_sizes"] = sizes
    summary["diff_file_sizes"] = diff_sizes
    summary["models"] = args.models
    out = REPO / "bench" / "out" / "coverage.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(summary, indent=2) + "\n")
    for kind in ("ours", "pandas", "diff"):
        s = summary[kind]
        rss = s["peak_rss_mb"]
        print(f"{kind:<7} median {s['median_s']:.2f}s  peak RSS {rss:.0f} MB  {s['runs_s']}")
    print(f"coverage time ours/pandas: {summary['ratio_ours_over_pandas']:.2f}x")
    print(f"written to {out}")


if __name__ == "__main__":
    main()
