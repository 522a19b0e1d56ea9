"""Launch overhead of a multi-rank job: the tiny Llama at TP 2 (two rank processes) against
the same model as a one-device job, torch_dispatch, real weights. The TP 2 job twice: its
ranks forked from their launcher (the default) and started as fresh interpreters
(KT_RANK_START=spawn, how every rank started before forking was built).

Each repeat runs all three through the real CLI (`kerneltracer run --force -j 2`,
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


LAYOUTS = ("single", "tp2", "tp2-spawn")


def run_once(work: Path, layout: str) -> dict[str, Any]:
    run_dir = work / layout
    model: dict[str, Any] = {"path": str(TINY), "name": layout}
    env = dict(ENV)
    if layout.startswith("tp2"):
        model["parallel"] = {"tp": 2}
    if layout == "tp2-spawn":
        env["KT_RANK_START"] = "spawn"
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
        [*KT, "run", str(cfg), "--force", "-j", "2"], env=env, capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise SystemExit(f"{layout}: kerneltracer run failed\n{proc.stdout}\n{proc.stderr}")
    (status_path,) = run_dir.glob("jobs/*/*/_TRACE_STATUS.json")
    status = json.loads(status_path.read_text())
    if status["status"] != "ok":
        raise SystemExit(f"{layout}: {status['status']}: {status.get('reason')}")
    out: dict[str, Any] = {
        "duration_s": status["duration_s"],
        "phases": status.get("phases", {}),
        "rank_start": status.get("summary", {}).get("rank_start"),
    }
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
    runs: dict[str, list[dict[str, Any]]] = {layout: [] for layout in LAYOUTS}
    load_before = Path("/proc/loadavg").read_text().split()[:3]
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
    single = summary["single"]["duration_s"]
    for layout in LAYOUTS[1:]:
        tp2 = summary[layout]["duration_s"]
        summary[layout]["overhead_s"] = round(tp2 - single, 3)
        summary[layout]["ratio_to_single"] = round(tp2 / single, 2)
    summary["spawn_over_fork"] = round(
        summary["tp2-spawn"]["duration_s"] / summary["tp2"]["duration_s"], 2
    )
    summary["loadavg"] = {
        "before": load_before,
        "after": Path("/proc/loadavg").read_text().split()[:3],
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"repeat": args.repeat, "summary": summary, "runs": runs}, indent=2))
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
