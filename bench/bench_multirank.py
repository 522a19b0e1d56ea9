"""Multi-rank timeline vs traceinsight (HTA) 0.6.1 on one job's rank traces.

The rank set is the test data's nccl_parser_config trace (rank 0 of a 2-rank A100 job) and
``--ranks - 1`` ranks derived from it (relabelled, shifted 500 µs per rank, NCCL kernels
longer), as tests/timeline/test_multirank.py builds them. Each side runs in a fresh
interpreter (imports included), order alternated, medians of ``--runs`` reported:

- ``ours``: load every rank + temporal breakdown + comm / comp overlap + collective calls,
  then the cross-rank waits and stragglers;
- ``hta``: ``TraceAnalysis(trace_dir)`` + ``get_temporal_breakdown`` +
  ``get_comm_comp_overlap`` (it computes no waits).

Wall time swings on a shared machine; CPU time (user + sys of the child and what it reaped,
HTA parses in a pool) much less. Nothing is asserted.

    .venv/bin/python bench/bench_multirank.py --ranks 4 --runs 5
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
TESTDATA = Path(os.environ.get("KT_TESTDATA", REPO.parent / "shared" / "testdata"))
SOURCE = TESTDATA / "hta" / "nccl_parser_config" / "nccl_data.json.gz"

_OURS = """
import sys
from pathlib import Path
from kerneltracer.analysis.timeline.analyses.gpu_breakdown import (
    comm_comp_overlap, select_gpu_work, temporal_breakdown)
from kerneltracer.analysis.timeline.analyses.multirank import cross_rank, rank_collectives
from kerneltracer.analysis.timeline.load.loader import load_chrome_trace
ranks = []
for p in sorted(Path(sys.argv[1]).glob("*.json.gz")):
    t = load_chrome_trace(p)
    w = select_gpu_work(t)
    temporal_breakdown(w); comm_comp_overlap(w)
    ranks.append(rank_collectives(t, t.rank))
cross_rank(ranks)
"""

_HTA = """
import logging, sys
from hta.trace_analysis import TraceAnalysis
logging.getLogger("hta").setLevel(logging.ERROR)
a = TraceAnalysis(trace_dir=sys.argv[1])
a.get_temporal_breakdown(visualize=False); a.get_comm_comp_overlap(visualize=False)
"""


def build_ranks(target: Path, n: int) -> None:
    doc = json.loads(gzip.decompress(SOURCE.read_bytes()))
    (target / "rank0.json.gz").write_bytes(SOURCE.read_bytes())
    for rank in range(1, n):
        d = json.loads(json.dumps(doc))
        d["distributedInfo"]["rank"] = rank
        for e in d["traceEvents"]:
            if isinstance(e.get("ts"), (int, float)):
                e["ts"] += 500.0 * rank
            if e.get("cat") == "kernel" and str(e.get("name", "")).startswith("ncclKernel"):
                e["dur"] *= 1.0 + 0.25 * rank
        (target / f"rank{rank}.json.gz").write_bytes(gzip.compress(json.dumps(d).encode()))


def measure(code: str, trace_dir: Path) -> dict[str, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-W", "ignore", "-c", code, str(trace_dir)],
        check=True,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": wall, "cpu_s": cpu}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    results: dict[str, list[dict[str, float]]] = {"ours": [], "hta": []}
    with tempfile.TemporaryDirectory() as tmp:
        build_ranks(Path(tmp), args.ranks)
        for run in range(args.runs):
            sides = [("ours", _OURS), ("hta", _HTA)]
            for name, code in sides if run % 2 == 0 else sides[::-1]:
                results[name].append(measure(code, Path(tmp)))
    summary: dict[str, Any] = {"ranks": args.ranks, "runs": args.runs}
    for name, rows in results.items():
        for key in ("wall_s", "cpu_s"):
            summary[f"{name}_{key}"] = round(statistics.median(r[key] for r in rows), 3)
    for key in ("wall_s", "cpu_s"):
        summary[f"ratio_{key}"] = round(summary[f"ours_{key}"] / summary[f"hta_{key}"], 3)
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
