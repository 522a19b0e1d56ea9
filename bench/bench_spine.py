"""Benchmarks of the spine, as ratios against baselines measured in the same run.

(a) orchestrator overhead per job vs a bare ``python -c "import torch, transformers"``;
(b) time to plan a run of 5,000 jobs that are all complete (bypass);
(c) torch_dispatch overhead: traced / untraced forward of the tiny Llama, OMP_NUM_THREADS=1,
    next to a recorder that repr()s every call's arguments (what KernelTracer's did).

Usage: python bench/bench_spine.py [--models models/tiny] [--repeat 5] [--only a,b,c]
Results are printed and written to bench/out/spine.json.
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

import yaml

REPO = Path(__file__).resolve().parent.parent
KT = [sys.executable, "-m", "kerneltracer.cli.main"]


def _timed(argv: list[str], env: dict[str, str] | None = None) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True, env=env)
    return time.perf_counter() - t0


# The same work a torch_dispatch job does, without kerneltracer: load, warm up, trace once.
_SAME_WORK = r"""
import sys, torch, transformers
from torch.utils._python_dispatch import TorchDispatchMode
cfg = transformers.AutoConfig.from_pretrained(sys.argv[1])
model = getattr(transformers, cfg.architectures[0]).from_pretrained(sys.argv[1]).eval()
ids = torch.randint(0, cfg.vocab_size, (1, 32))
class Count(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))
with torch.no_grad():
    model(input_ids=ids)
    with Count():
        model(input_ids=ids)
"""


def bench_overhead(models: Path, repeat: int) -> dict[str, float]:
    """Per-job wall time through the orchestrator vs bare imports and vs the same work bare."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    names = ["tiny-llama", "tiny-gpt2", "tiny-bert"]
    baseline, per_job, worker, same = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "c.yaml"
        cfg.write_text(
            yaml.safe_dump(
                {
                    "output_dir": str(Path(tmp) / "run"),
                    "defaults": {"tracers": ["torch_dispatch"]},
                    "models": [{"path": str((models / n).resolve())} for n in names],
                }
            )
        )
        for _ in range(repeat):
            # Interleaved so that machine noise hits both sides alike.
            baseline.append(_timed([sys.executable, "-c", "import torch, transformers"], env))
            same.append(
                sum(_timed([sys.executable, "-c", _SAME_WORK, str(models / n)], env) for n in names)
                / len(names)
            )
            per_job.append(_timed([*KT, "run", str(cfg), "--force"], env) / len(names))
            for n in names:
                st = json.loads(
                    (Path(tmp) / "run/jobs" / n / "torch_dispatch/_TRACE_STATUS.json").read_text()
                )
                worker.append(st["duration_s"])
    b, j, w = statistics.median(baseline), statistics.median(per_job), statistics.median(worker)
    return {
        "baseline_import_s": b,
        "per_job_s": j,
        "worker_s": w,
        "ratio_per_job": j / b,
        "ratio_worker": w / b,
        "same_work_bare_s": statistics.median(same),
        "ratio_vs_same_work": j / statistics.median(same),
    }


def bench_plan(n_jobs: int, repeat: int) -> dict[str, float]:
    """Plan a run whose jobs are all complete: config → jobs → statuses read → nothing to run."""
    import numpy as np
    from safetensors.numpy import save_file

    sys.path.insert(0, str(REPO))
    from kerneltracer.core.layout import RunPaths
    from kerneltracer.core.status import JobStatus, base_status, describe_output, write_status
    from kerneltracer.orchestrator import RunRequest, open_run
    from kerneltracer.orchestrator.expand import plan_jobs
    from kerneltracer.orchestrator.planning import load_config
    from kerneltracer.tracers.registry import TRACERS

    tracers = TRACERS.names_for("huggingface")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        n_models = n_jobs // len(tracers)
        # Real (tiny) model dirs: planning checks every local model is whole.
        weights = {"w": np.zeros((4, 4), dtype=np.float32)}
        for i in range(n_models):
            model = root / "models" / f"m{i:05d}"
            model.mkdir(parents=True)
            (model / "config.json").write_text('{"model_type": "llama"}')
            save_file(weights, str(model / "model.safetensors"))
        cfg = root / "c.yaml"
        cfg.write_text(
            yaml.safe_dump(
                {
                    "output_dir": str(root / "run"),
                    "models": [{"path": f"models/m{i:05d}"} for i in range(n_models)],
                }
            )
        )
        config, base = load_config(cfg)
        for job in plan_jobs(config, base):
            job_dir = RunPaths(root / "run").job(job.key).dir
            job_dir.mkdir(parents=True)
            outputs = []
            for name in ("a.jsonl", "b.json", "c.csv"):
                (job_dir / name).write_bytes(os.urandom(2048))
                outputs.append(describe_output(job_dir, name))
            write_status(job_dir, base_status(job, "x", JobStatus.OK, outputs=outputs))
        in_process = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            with open_run(RunRequest(config_path=cfg)) as session:
                assert session.plan.to_run == [] and not session.model_failures
                assert len(session.jobs) == n_models * len(tracers)
            in_process.append(time.perf_counter() - t0)
        cli = [_timed([*KT, "run", str(cfg)]) for _ in range(max(1, repeat // 2))]
    return {
        "jobs": n_models * len(tracers),
        "plan_s": statistics.median(in_process),
        "cli_run_s": statistics.median(cli),
    }


_DISPATCH = r"""
import json, statistics, sys, time
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from transformers import AutoModelForCausalLM
from kerneltracer.worker.tracers._dispatch_recorder import DispatchRecorder

class ReprRecorder(TorchDispatchMode):
    # The peer: format every call's arguments as it happens.
    def __init__(self):
        super().__init__()
        self.calls = []
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.calls.append((str(func), repr(args), repr(kwargs)))
        return out

model = AutoModelForCausalLM.from_pretrained(sys.argv[1]).eval()
ids = torch.randint(0, model.config.vocab_size, (1, 32), generator=torch.Generator().manual_seed(0))
def fwd():
    with torch.no_grad():
        model(input_ids=ids)
def timed(make_mode, n):
    out = []
    for _ in range(n):
        mode = make_mode()
        t0 = time.perf_counter()
        if mode is None:
            fwd()
        else:
            with mode:
                fwd()
        out.append(time.perf_counter() - t0)
    return statistics.median(out)
for _ in range(5):
    fwd()
n = int(sys.argv[2])
res = {"untraced": [], "ours": [], "repr": []}
for _ in range(3):  # interleave rounds so drift hits all three alike
    res["untraced"].append(timed(lambda: None, n))
    res["ours"].append(timed(DispatchRecorder, n))
    res["repr"].append(timed(ReprRecorder, n))
print(json.dumps({k: statistics.median(v) for k, v in res.items()}))
"""


def bench_dispatch(models: Path, n: int) -> dict[str, float]:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(REPO))
    out = subprocess.run(
        [sys.executable, "-c", _DISPATCH, str(models / "tiny-llama"), str(n)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    r = json.loads(out.stdout.strip().splitlines()[-1])
    return {
        **{f"{k}_ms": v * 1e3 for k, v in r.items()},
        "ratio_ours": r["ours"] / r["untraced"],
        "ratio_repr": r["repr"] / r["untraced"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--models", type=Path, default=REPO / "models/tiny")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=5000)
    ap.add_argument("--only", default="a,b,c")
    args = ap.parse_args()
    if not (args.models / "tiny-llama").is_dir():
        sys.exit(f"tiny models not found in {args.models}: run `make models` first")
    results: dict[str, dict[str, float]] = {}
    parts = set(args.only.split(","))
    if "a" in parts:
        r = results["a_overhead"] = bench_overhead(args.models, args.repeat)
        print(
            f"(a) per job {r['per_job_s']:.2f}s (worker {r['worker_s']:.2f}s) vs bare import "
            f"{r['baseline_import_s']:.2f}s: ratio {r['ratio_per_job']:.2f}x "
            f"(worker alone {r['ratio_worker']:.2f}x; goal <= 1.2x); vs the same work done "
            f"bare ({r['same_work_bare_s']:.2f}s): {r['ratio_vs_same_work']:.2f}x"
        )
    if "b" in parts:
        r = results["b_plan"] = bench_plan(args.jobs, args.repeat)
        print(
            f"(b) plan {r['jobs']:.0f} complete jobs: {r['plan_s']:.3f}s in process, "
            f"{r['cli_run_s']:.2f}s for the whole `kerneltracer run` (goal <= 1 s)"
        )
    if "c" in parts:
        r = results["c_dispatch"] = bench_dispatch(args.models, 20)
        print(
            f"(c) tiny Llama forward: untraced {r['untraced_ms']:.2f} ms, torch_dispatch "
            f"{r['ours_ms']:.2f} ms ({r['ratio_ours']:.2f}x), repr recorder {r['repr_ms']:.2f} ms "
            f"({r['ratio_repr']:.2f}x) (goal <= 4x)"
        )
    out = REPO / "bench/out/spine.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
