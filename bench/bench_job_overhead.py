"""Where a light batch's time goes, against one bare Python process doing the same work.

The batch is issue 42's: six light jobs (the three tiny models x torch_dispatch, eval and
train, 32 tokens) through the real CLI (`kerneltracer run --force -j 1`, preloaded workers,
OMP_NUM_THREADS=1). The bare peer imports torch and transformers once, then per job loads
the model from its directory and runs one forward (and backward in train) under a
TorchDispatchMode. Each round runs the bare peer, this checkout, and with --against OLD the
same CLI from another checkout (PYTHONPATH), in a rotating order; medians over --repeat
rounds, with the machine's load average before each round.

Per run it splits the wall time (from the CLI's start to its exit) into phases, from the
CLI's stderr lines and the job statuses:
- start: until the first job starts (CLI imports, config, plan);
- server: the preloaded server's import time (its own "ready in" figure);
- jobs: each job's wall as the orchestrator saw it (duration_s), and of it `work` (the
  worker's load + warmup + trace + write phases) and `outside` (the rest: fork, the
  worker's start and end, status writes);
- gaps: between one job's end and the next one's start (sealing, the next job's dir);
- tail: from the last job's end to the CLI's exit (the server's exit, the summary table).

The issue's goals: wall <= 1.1x the bare process, per-job overhead <= 0.2 s, where the
per-job overhead is (wall - bare wall) / jobs.

Usage: python bench/bench_job_overhead.py [--repeat 5] [--against OLD_CHECKOUT]
Needs the tiny models (`make models`). Results are printed and written to
bench/out/job_overhead.json.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
TINY = REPO / "models" / "tiny"
OUT = REPO / "bench" / "out" / "job_overhead.json"
MODELS = ("tiny-llama", "tiny-gpt2", "tiny-bert")
ENV = dict(os.environ, OMP_NUM_THREADS="1")

_BARE = r"""
import sys, time
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


def _stamp(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp()


def run_kt(work: Path, tag: str, checkout: Path | None) -> dict[str, Any]:
    run_dir = work / f"run-{tag}"
    cfg = work / f"six-{tag}.yaml"
    models = [{"path": str(TINY / m), "mode": mode} for m in MODELS for mode in ("eval", "train")]
    spec = {"defaults": {"seq_len": 32, "tracers": ["torch_dispatch"]}, "models": models}
    cfg.write_text(yaml.safe_dump({"output_dir": str(run_dir), **spec}))
    env = dict(ENV)
    if checkout is not None:
        env["PYTHONPATH"] = str(checkout)
    argv = [sys.executable, "-m", "kerneltracer.cli.main", "run", str(cfg), "--force", "-j", "1"]
    start = time.time()
    t0 = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=work)
    wall = time.perf_counter() - t0
    end = start + wall
    jobs = []
    for path in run_dir.glob("jobs/*/*/_TRACE_STATUS.json"):
        st = json.loads(path.read_text())
        work_s = sum((st.get("phases") or {}).values())
        finished = _stamp(st["finished_at"])
        jobs.append(
            {
                "status": st["status"],
                "start": finished - st["duration_s"],
                "end": finished,
                "duration_s": st["duration_s"],
                "work_s": work_s,
            }
        )
    if len(jobs) != len(models) or any(j["status"] != "ok" for j in jobs):
        raise SystemExit(f"{tag}: not every job ended ok: {proc.stderr[-2000:]}")
    jobs.sort(key=lambda j: j["start"])
    ready = re.search(r"server ready in ([0-9.]+) s", proc.stderr)
    gaps = [b["start"] - a["end"] for a, b in itertools.pairwise(jobs)]
    return {
        "wall_s": wall,
        "start_s": jobs[0]["start"] - start,
        "server_s": float(ready.group(1)) if ready else None,
        "job_s": statistics.median(j["duration_s"] for j in jobs),
        "work_s": statistics.median(j["work_s"] for j in jobs),
        "outside_s": statistics.median(j["duration_s"] - j["work_s"] for j in jobs),
        "gap_s": statistics.median(gaps),
        "tail_s": end - jobs[-1]["end"],
    }


def _median(rows: list[dict[str, Any]]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for key in rows[0]:
        values = [r[key] for r in rows if r[key] is not None]
        out[key] = round(statistics.median(values), 3) if values else None
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--against", type=Path, help="another checkout, run the same way")
    args = parser.parse_args()
    if not (TINY / MODELS[0]).is_dir():
        raise SystemExit(f"no tiny models in {TINY}: run `make models`")
    contenders: dict[str, Path | None] = {"this": None}
    if args.against is not None:
        contenders["against"] = args.against.resolve()
    bare: list[float] = []
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in contenders}
    loads = []
    with tempfile.TemporaryDirectory(prefix="kt-bench-overhead-") as tmp:
        work = Path(tmp)
        for i in range(args.repeat):
            loads.append(os.getloadavg()[0])
            order = ["bare", *contenders]
            order = order[i % len(order) :] + order[: i % len(order)]
            for name in order:
                if name == "bare":
                    bare.append(run_bare())
                else:
                    runs[name].append(run_kt(work, name, contenders[name]))
            print(f"round {i + 1}: load {loads[-1]:.1f}", flush=True)
    bare_s = statistics.median(bare)
    results: dict[str, Any] = {
        "repeat": args.repeat,
        "load_avg": [round(x, 1) for x in loads],
        "bare_s": round(bare_s, 3),
    }
    for name, rows in runs.items():
        row = _median(rows)
        ratios = [r["wall_s"] / b for r, b in zip(rows, bare, strict=True)]
        row["over_bare"] = round(statistics.median(ratios), 3)
        wall = statistics.median(r["wall_s"] for r in rows)
        row["per_job_overhead_s"] = round((wall - bare_s) / 6, 3)
        results[name] = row
    if args.against is not None:
        results["against_checkout"] = str(args.against)
    print(json.dumps(results, indent=1))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
