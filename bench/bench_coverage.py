"""Coverage and diff on a synthetic run of 500 models x 6 tracers, against pandas by hand.

The synthetic run has real status files (the TraceStatus schema) for 3000 jobs: per model a
torch_dispatch job (~80 ops), a torch_profiler job (~120 key_averages rows) and four other
tracers with a small output each; 2% of the jobs failed. Measured, each in a fresh
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
import random
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

TRACERS = [
    "torch_dispatch",
    "torch_profiler",
    "torch_compile",
    "print_aten",
    "print_fx",
    "timeline",
]
OP_POOL = [f"aten.op{i}.default" for i in range(400)]


def _status(model: str, tracer: str, status: str, outputs: list[str], job_dir: Path) -> bytes:
    from kerneltracer.status import JobStatus, TraceStatus, describe_output

    st = TraceStatus.model_validate(
        {
            "status": JobStatus(status),
            "job_key": f"{model}/{tracer}",
            "attempt": "bench",
            "request": {"tracer": tracer},
            "request_hash": "0" * 16,
            "tracer": tracer,
            "tracer_version": "1",
            "model": {"display": model, "slug": model},
            "framework": "huggingface",
            "device": "cpu",
            "mode": "eval",
            "dtype": "auto",
            "options_hash": "0" * 16,
            "reason": None if status == "ok" else "RuntimeError: synthetic failure",
            "outputs": [describe_output(job_dir, o) for o in outputs] if status == "ok" else [],
        }
    )
    return st.model_dump_json(indent=2).encode()


def make_run(run: Path, n_models: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    for i in range(n_models):
        model = f"model-{i:04d}"
        ops = rng.sample(OP_POOL, 80)
        for tracer in TRACERS:
            job = run / "jobs" / model / tracer
            job.mkdir(parents=True)
            files: dict[str, str] = {}
            if tracer == "torch_dispatch":
                summary = {
                    "ops": {
                        op: {"calls": rng.randint(1, 50), "signatures": rng.randint(1, 5)}
                        for op in ops
                    }
                }
                files["dispatch_summary.json"] = json.dumps(summary)
                files["dispatch_op_counts.csv"] = "op,calls,signatures\n" + "".join(
                    f"{op},{v['calls']},{v['signatures']}\n" for op, v in summary["ops"].items()
                )
            elif tracer == "torch_profiler":
                lines = [
                    "name,input_shapes,calls,cpu_time_total_us,self_cpu_time_total_us,"
                    "device_time_total_us,self_device_time_total_us"
                ]
                lines.append("ProfilerStep*,[],2,900,400,0,0")
                for op in ops[:60]:
                    name = op.replace("aten.", "aten::").removesuffix(".default")
                    for shape in ("[[1, 2]]", "[[4, 8]]"):
                        t = rng.uniform(1, 500)
                        lines.append(
                            f'{name},"{shape}",{rng.randint(1, 9)},{t * 1.2:.3f},{t:.3f},0,0'
                        )
                files["key_averages.csv"] = "\n".join(lines) + "\n"
            else:
                files["out.txt"] = "x" * 200
            for name, text in files.items():
                (job / name).write_text(text)
            status = "failed" if rng.random() < 0.02 else "ok"
            (job / "_TRACE_STATUS.json").write_bytes(
                _status(model, tracer, status, list(files), job)
            )


def child_ours(run: Path, out: Path) -> None:
    from kerneltracer.coverage import build_coverage, write_coverage

    write_coverage(build_coverage(run), out)


def child_pandas(run: Path, out: Path) -> None:
    import pandas as pd

    frames = []
    for status_path in sorted(run.glob("jobs/*/*/_TRACE_STATUS.json")):
        st = json.loads(status_path.read_text())
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
        job = copy / "jobs" / f"model-{i * 97 % n_models:04d}"
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
        make_run(run, args.models)
        _edit_copy(run, copy, args.models)
        print(
            f"synthetic run: {args.models} models x {len(TRACERS)} tracers "
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
