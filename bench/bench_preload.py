"""Preloaded workers against fresh interpreters, and against one bare Python process.

Batches, each run through the real CLI (`kerneltracer run --force -j 1`, OMP_NUM_THREADS=1)
with `--preload` and with `--no-preload`, alternating, --repeat times:

- six: the issue's six light jobs: the three tiny models (llama, gpt2, bert) x torch_dispatch,
  in eval and train mode;
- mixed: the three tiny models x torch_dispatch, torch_profiler, print_fx (9 jobs);
- fake: two full-size published configs (Llama-3.1-8B, Qwen2.5-72B) on fake weights x
  torch_dispatch at 512 tokens.

The bare baseline does the six batch's work in one process: imports once, then per job
loads the model from its directory and runs one forward under a TorchDispatchMode that
counts ops (what a hand-written script would do; no isolation, no outputs written).

Per batch: total wall of the command (start-up of the CLI and the server included) and the
per-job `duration_s` the orchestrator recorded; medians over the repeats. Needs the tiny
models (`make models`). Usage: python bench/bench_preload.py [--repeat 3] [--only six,mixed]
Results are printed and written to bench/out/preload.json.
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
TINY = REPO / "models" / "tiny"
CONFIGS = REPO / "tests" / "fixtures" / "hub_configs"
OUT = REPO / "bench" / "out" / "preload.json"
KT = [sys.executable, "-m", "kerneltracer.cli.main"]
MODELS = ("tiny-llama", "tiny-gpt2", "tiny-bert")
ENV = dict(os.environ, OMP_NUM_THREADS="1")


def batches() -> dict[str, dict[str, Any]]:
    tiny = [str(TINY / m) for m in MODELS]
    fake = [str(CONFIGS / n) for n in ("meta-llama--Llama-3.1-8B", "Qwen--Qwen2.5-72B-Instruct")]
    return {
        "six": {
            "defaults": {"seq_len": 32, "tracers": ["torch_dispatch"]},
            "models": [{"path": p, "mode": m} for p in tiny for m in ("eval", "train")],
        },
        "mixed": {
            "defaults": {
                "seq_len": 32,
                "tracers": ["torch_dispatch", "torch_profiler", "print_fx"],
            },
            "models": [{"path": p} for p in tiny],
        },
        "fake": {
            "defaults": {"weights": "fake", "seq_len": 512, "tracers": ["torch_dispatch"]},
            "models": [{"path": p, "name": Path(p).name} for p in fake],
        },
    }


def run_batch(name: str, spec: dict[str, Any], preload: bool, work: Path) -> dict[str, Any]:
    run_dir = work / f"{name}-{'on' if preload else 'off'}"
    cfg = work / f"{name}.yaml"
    cfg.write_text(yaml.safe_dump({"output_dir": str(run_dir), **spec}))
    flag = "--preload" if preload else "--no-preload"
    t0 = time.perf_counter()
    proc = subprocess.run(
        [*KT, "run", str(cfg), "--force", "-j", "1", flag], env=ENV, capture_output=True, text=True
    )
    wall = time.perf_counter() - t0
    jobs = {}
    for status in sorted(run_dir.glob("jobs/*/*/_TRACE_STATUS.json")):
        st = json.loads(status.read_text())
        jobs[st["job_key"]] = {"status": st["status"], "duration_s": st.get("duration_s")}
    if not jobs:
        raise SystemExit(f"{name} ({flag}) wrote no job status: {proc.stderr[-2000:]}")
    return {"wall_s": wall, "exit": proc.returncode, "jobs": jobs}


_BARE = r"""
import sys, time
t0 = time.perf_counter()
import torch, transformers
from torch.utils._python_dispatch import TorchDispatchMode
class Count(TorchDispatchMode):
    def __init__(self):
        super().__init__(); self.n = 0
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.n += 1
        return func(*args, **(kwargs or {}))
for path in sys.argv[1:]:
    for train in (False, True):
        model = transformers.AutoModel.from_pretrained(path)
        model.train(train)
        ids = torch.randint(0, model.config.vocab_size, (1, 32))
        with Count() as c:
            out = model(input_ids=ids)
            if train:
                out.last_hidden_state.float().sum().backward()
print(time.perf_counter() - t0)
"""


def run_bare() -> float:
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", _BARE, *[str(TINY / m) for m in MODELS]],
        env=ENV,
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - t0


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    keys = sorted(runs[0]["jobs"])
    per_job = {
        k: statistics.median(r["jobs"][k]["duration_s"] or 0.0 for r in runs if k in r["jobs"])
        for k in keys
    }
    return {
        "wall_s": round(statistics.median(r["wall_s"] for r in runs), 2),
        "job_s_median": round(statistics.median(per_job.values()), 3),
        "job_s_sum": round(sum(per_job.values()), 2),
        "statuses": sorted({j["status"] for r in runs for j in r["jobs"].values()}),
        "per_job_s": {k: round(v, 3) for k, v in per_job.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", default="six,mixed,fake")
    args = parser.parse_args()
    wanted = args.only.split(",")
    results: dict[str, Any] = {"repeat": args.repeat}
    with tempfile.TemporaryDirectory(prefix="kt-bench-preload-") as tmp:
        work = Path(tmp)
        for name, spec in batches().items():
            if name not in wanted:
                continue
            on: list[dict[str, Any]] = []
            off: list[dict[str, Any]] = []
            for _ in range(args.repeat):  # alternate, so drift in machine load hits both
                on.append(run_batch(name, spec, True, work))
                off.append(run_batch(name, spec, False, work))
            row = {"preload": summarise(on), "spawn": summarise(off)}
            row["speedup_wall"] = round(row["spawn"]["wall_s"] / row["preload"]["wall_s"], 2)
            if name == "six":
                bare = [run_bare() for _ in range(args.repeat)]
                row["bare_s"] = round(statistics.median(bare), 2)
                row["preload_over_bare"] = round(row["preload"]["wall_s"] / row["bare_s"], 2)
                row["spawn_over_bare"] = round(row["spawn"]["wall_s"] / row["bare_s"], 2)
            results[name] = row
            print(name, json.dumps({k: v for k, v in row.items()}, indent=1), flush=True)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
