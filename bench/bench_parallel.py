"""Parallel layouts simulated on fake weights through the real CLI: seconds and peak RSS per
(model, layout), and the whole config's wall time.

The layouts of tests/parallel/test_layouts_e2e.py (dense 70B / 405B at TP 8 and TP 8 x PP 2,
Qwen2.5-72B at TP 8, three MoE models at EP 8, Llama-3.1-8B training under FSDP 8), local
config directories (no hub), torch_dispatch, --layers layers per model (0: the config's
own depth) and --seq-len tokens. One `kerneltracer run --force -j 1` per repeat, so no two
workers share the cores; per job it reports the median of the job's wall time as the
orchestrator saw it (`duration_s`), its per-role phases, its roles and collectives, and the
worker tree's peak RSS.

Usage: python bench/bench_parallel.py [--layers 2] [--seq-len 2048] [--repeat 3]
Results are printed and written to bench/out/parallel.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
CONFIGS = REPO / "tests" / "fixtures" / "hub_configs"
OUT = REPO / "bench" / "out" / "parallel.json"
KT = [sys.executable, "-m", "kerneltracer.cli.main"]

LAYOUTS: list[tuple[str, dict[str, Any], str]] = [
    ("meta-llama--Llama-3.3-70B-Instruct", {"tp": 8}, "eval"),
    ("meta-llama--Llama-3.3-70B-Instruct", {"tp": 8, "pp": 2}, "eval"),
    ("meta-llama--Llama-3.1-405B", {"tp": 8}, "eval"),
    ("meta-llama--Llama-3.1-405B", {"tp": 8, "pp": 2}, "eval"),
    ("Qwen--Qwen2.5-72B-Instruct", {"tp": 8}, "eval"),
    ("mistralai--Mixtral-8x22B-v0.1", {"ep": 8}, "eval"),
    ("Qwen--Qwen3-30B-A3B", {"ep": 8}, "eval"),
    ("deepseek-ai--DeepSeek-V3", {"ep": 8}, "eval"),
    ("meta-llama--Llama-3.1-8B", {"dp": 8, "fsdp": True}, "train"),
]


def _name(model: str, parallel: dict[str, Any]) -> str:
    return model + "." + "-".join(f"{k}{v}" for k, v in parallel.items() if v is not True)


def run_once(layers: int, seq_len: int, work: Path) -> tuple[float, dict[str, dict[str, Any]]]:
    models = []
    for model, parallel, mode in LAYOUTS:
        extra = {"layers": layers} if layers else {}
        models.append(
            {
                "path": str(CONFIGS / model),
                "name": _name(model, parallel),
                "mode": mode,
                "parallel": {**parallel, **extra},
            }
        )
    cfg = work / "parallel.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "output_dir": str(work / "run"),
                "defaults": {
                    "weights": "fake",
                    "seq_len": seq_len,
                    "tracers": ["torch_dispatch"],
                    "timeout_s": 3600,
                },
                "models": models,
            }
        )
    )
    env = dict(os.environ, OMP_NUM_THREADS="1")
    t0 = time.monotonic()
    proc = subprocess.run(
        [*KT, "run", str(cfg), "--force", "-j", "1"], env=env, capture_output=True, text=True
    )
    wall = time.monotonic() - t0
    rows: dict[str, dict[str, Any]] = {}
    for status_file in sorted((work / "run" / "jobs").glob("*/*/_TRACE_STATUS.json")):
        st = json.loads(status_file.read_text())
        key = f"{status_file.parent.parent.name}/{status_file.parent.name}"
        summary = st.get("summary") or {}
        rows[key] = {
            "status": st["status"],
            "reason": st.get("reason"),
            "duration_s": st.get("duration_s"),
            "phases": st.get("phases"),
            "peak_rss_mb": round((st.get("peak_rss_bytes") or 0) / 2**20),
            "roles": summary.get("roles"),
            "collectives": summary.get("collectives"),
        }
    if not rows:
        rows["run"] = {"status": "missing", "reason": proc.stderr[-300:]}
    return wall, rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--seq-len", type=int, default=2048)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    walls: list[float] = []
    runs: list[dict[str, dict[str, Any]]] = []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            wall, rows = run_once(args.layers, args.seq_len, Path(tmp))
            walls.append(wall)
            runs.append(rows)
    table: dict[str, dict[str, Any]] = {}
    for key, last in runs[-1].items():
        durations = [r[key]["duration_s"] for r in runs if r.get(key, {}).get("duration_s")]
        rss = [r[key]["peak_rss_mb"] for r in runs if key in r]
        table[key] = {
            **last,
            "duration_s": statistics.median(durations) if durations else None,
            "peak_rss_mb": max(rss) if rss else None,
        }
    result = {
        "layers": args.layers,
        "seq_len": args.seq_len,
        "repeat": args.repeat,
        "wall_s": round(statistics.median(walls), 2),
        "jobs": table,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2))
    print(f"{'job':<70} {'status':<8} {'s':>7} {'MiB':>6} {'roles':>5} {'colls':>5}")
    for key, row in table.items():
        print(
            f"{key:<70} {row['status']:<8} {row['duration_s'] or 0:>7.2f} "
            f"{row['peak_rss_mb'] or 0:>6} {row['roles'] or 0:>5} {row['collectives'] or 0:>5}"
        )
    print(f"whole config: {result['wall_s']} s (median of {args.repeat})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
