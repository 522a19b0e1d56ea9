"""Launch overhead of a multi-rank job: the tiny Llama at TP 2 (two rank processes) against
the same model as a one-device job, torch_dispatch, real weights.

Each repeat runs both through the real CLI (`kerneltracer run --force -j 1`,
OMP_NUM_THREADS=1), alternating. Per job: the `duration_s` the orchestrator recorded (worker
start to status) and, for the TP 2 job, each rank's phases (init: the gloo rendezvous; load;
warmup; trace; write) from its RANK_STATUS.json. Medians over the repeats. Needs the tiny
models (`make models`). Usage: python bench/bench_ranks.py [--repeat 3]
Results are printed and written to bench/out/ranks.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
TINY = REPO / "models" / "tiny" / "tiny-llama"
OUT = REPO / "bench" / "out" / "ranks.json"
KT = [sys.executable, "-m", "kerneltracer.cli.main"]
ENV = dict(os.environ, OMP_NUM_THREADS="1")


def run_once(work: Path, layout: str) -> dict[str, Any]:
    run_dir = work / layout
    model: dict[str, Any] = {"path": str(TINY), "name": layout}
    if layout == "tp2":
        model["parallel"] = {"tp": 2}
    cfg = work / f"{layout}.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "output_dir": str(run_dir),
                "defaults": {"seq_len": 32, "tracers": ["torch_dispatch"]},
                "models": [model],
            }
        )
    )
    proc = subprocess.run(
        [*KT, "run", str(cfg), "--force", "-j", "1"], env=ENV, capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise SystemExit(f"{layout}: kerneltracer run failed\n{proc.stdout}\n{proc.stderr}")
    (status_path,) = run_dir.glob("jobs/*/*/_TRACE_STATUS.json")
    status = json.loads(status_path.read_text())
    out: dict[str, Any] = {"duration_s": status["duration_s"], "phases": status.get("phases", {})}
    for rank_status in sorted(status_path.parent.glob("rank_*/RANK_STATUS.json")):
        rank = json.loads(rank_status.read_text())
        out[f"rank_{rank['rank']}"] = rank.get("phases", {})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if not TINY.is_dir():
        raise SystemExit(f"{TINY} is missing: make models")
    runs: dict[str, list[dict[str, Any]]] = {"single": [], "tp2": []}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeat):
            for layout in runs:
                runs[layout].append(run_once(Path(tmp), layout))
    summary: dict[str, Any] = {}
    for layout, rows in runs.items():
        summary[layout] = {"duration_s": statistics.median(r["duration_s"] for r in rows)}
        for rank in ("rank_0", "rank_1"):
            phases = [r[rank] for r in rows if rank in r]
            if phases:
                summary[layout][rank] = {
                    name: round(statistics.median(p.get(name, 0.0) for p in phases), 3)
                    for name in phases[0]
                }
    single, tp2 = summary["single"]["duration_s"], summary["tp2"]["duration_s"]
    summary["overhead_s"] = round(tp2 - single, 3)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"repeat": args.repeat, "summary": summary, "runs": runs}, indent=2))
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
