"""Every view after a run, on a synthetic run of 1,000 models x 5 tracers (5,000 jobs).

The run dir comes from tests.support.synthetic_run (statuses, dispatch summaries, profiler
tables and graph texts, with the deterministic mix of failed / oom / timeout / crashed /
pending / damaged jobs the report's scale test uses; --extra-ops more ops per model give
the op tables a realistic width). Each view is a fresh CLI process (start-up included, what
a user waits for), timed with its peak RSS from /usr/bin/time -v; medians of --repeat runs:

    status RUN, status RUN --json, report RUN, coverage RUN, corpus RUN, diff RUN RUN_COPY

The planner's bypass (5,000 complete jobs) is bench/bench_spine.py (b); its figure is
read from bench/out/spine.json when present. `slurm status` needs a submission record and
a cluster, and is not measured here.

Usage: python bench/bench_views.py [--models 1000] [--repeat 3] [--extra-ops 40]
Results are printed and written to bench/out/views.json.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "bench" / "out" / "views.json"
KT = [sys.executable, "-m", "kerneltracer.cli.main"]
_RSS = re.compile(r"Maximum resident set size \(kbytes\): (\d+)")
_WALL = re.compile(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)")


def timed(argv: list[str]) -> tuple[float, float, int]:
    """(wall s, peak RSS MiB, exit code) of one CLI process."""
    proc = subprocess.run(
        ["/usr/bin/time", "-v", *KT, *argv], capture_output=True, text=True, check=False
    )
    rss = _RSS.search(proc.stderr)
    wall = _WALL.search(proc.stderr)
    if rss is None or wall is None:
        raise SystemExit(f"no /usr/bin/time figures for {argv}: {proc.stderr[-500:]}")
    h, m, s = wall.groups()
    seconds = int(h or 0) * 3600 + int(m) * 60 + float(s)
    return seconds, int(rss.group(1)) / 1024, proc.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--extra-ops", type=int, default=40)
    args = parser.parse_args()
    if str(REPO) not in sys.path:  # tests.support is not installed: it lives in the repo
        sys.path.insert(0, str(REPO))
    from tests.support.synthetic_run import SIX_TRACERS, make_synthetic_run

    results: dict[str, Any] = {"models": args.models, "repeat": args.repeat}
    with tempfile.TemporaryDirectory(prefix="kt-bench-views-") as tmp:
        run = Path(tmp) / "run"
        keys = make_synthetic_run(run, args.models, SIX_TRACERS[:5], extra_ops=args.extra_ops)
        copy = Path(tmp) / "run-copy"
        shutil.copytree(run, copy)
        results["jobs"] = len(keys)
        views = {
            "status": ["status", str(run)],
            "status --json": ["status", str(run), "--json"],
            "report": ["report", str(run)],
            "coverage": ["coverage", str(run), "-o", str(Path(tmp) / "cov")],
            "corpus": ["corpus", str(run), "-o", str(Path(tmp) / "corpus")],
            "diff": ["diff", str(run), str(copy)],
        }
        for name, argv in views.items():
            runs = [timed(argv) for _ in range(args.repeat)]
            results[name] = {
                "wall_s": round(statistics.median(r[0] for r in runs), 2),
                "peak_rss_mib": round(statistics.median(r[1] for r in runs)),
                "exit": runs[-1][2],
            }
            print(f"{name:<14} {results[name]}", flush=True)
        report = run / "report"
        results["report_bytes"] = sum(p.stat().st_size for p in report.rglob("*") if p.is_file())
    spine = REPO / "bench" / "out" / "spine.json"
    if spine.is_file():
        results["planner_bypass (bench_spine b)"] = json.loads(spine.read_text()).get("b")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
