"""The model zoo through every Hugging Face tracer, eval and train: share of jobs that end ok,
and what input building costs per job.

(a) share: builds the tiny zoo (kerneltracer models build-zoo), runs every architecture ×
    tracer × mode through the orchestrator and counts end states per tracer; lists every
    job that is not ok with its reason.
(b) input overhead: in one process, the median time of build_workload (prefill) per
    architecture over --repeat runs, next to the median time to load that model from disk
    (what a worker does just before): the ratio is input building's share of loading.

Usage: python bench/bench_zoo.py [--tracers a,b] [--only a,b] [--jobs 2] [--repeat 5]
       [--skip-run] [--weights real|fake]
Results are printed and written to bench/out/zoo.json (zoo-fake.json for --weights fake).
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
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
KT = [sys.executable, "-m", "kerneltracer.cli.main"]
TRACERS = ["torch_dispatch", "torch_profiler", "print_fx", "print_aten", "torch_compile"]


def run_matrix(
    zoo: Path, names: list[str], tracers: list[str], jobs: int, work: Path, weights: str = "real"
) -> dict:
    models = []
    for name in names:
        models += [{"path": str(zoo / name)}, {"path": str(zoo / name), "mode": "train"}]
    cfg = work / "zoo.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "output_dir": str(work / "run"),
                "defaults": {
                    "tracers": tracers,
                    "seq_len": 16,
                    "timeout_s": 900,
                    "weights": weights,
                },
                "models": models,
            }
        )
    )
    env = dict(os.environ, OMP_NUM_THREADS="1")
    t0 = time.perf_counter()
    subprocess.run([*KT, "run", str(cfg), "--jobs", str(jobs)], env=env, capture_output=True)
    wall = time.perf_counter() - t0
    per_tracer: dict[str, Counter[str]] = {}
    not_ok = []
    for status_file in sorted((work / "run" / "jobs").glob("*/*/_TRACE_STATUS.json")):
        st = json.loads(status_file.read_text())
        per_tracer.setdefault(st["tracer"], Counter())[st["status"]] += 1
        if st["status"] != "ok":
            not_ok.append({"job": st["job_key"], "status": st["status"], "reason": st["reason"]})
    total = sum(sum(c.values()) for c in per_tracer.values())
    ok = sum(c["ok"] for c in per_tracer.values())
    # print_aten's group alternatives end skipped when print_aten succeeded: not failures.
    skipped = sum(c["skipped"] for c in per_tracer.values())
    return {
        "wall_s": round(wall, 1),
        "jobs": total,
        "ok": ok,
        "skipped_group_alternatives": skipped,
        "ok_share": round(ok / max(1, total - skipped), 4),
        "per_tracer": {t: dict(c) for t, c in per_tracer.items()},
        "not_ok": not_ok,
    }


def input_overhead(zoo: Path, names: list[str], repeat: int) -> dict[str, Any]:
    import torch
    import transformers

    from kerneltracer.worker.inputs import InputSpec, build_workload

    torch.set_num_threads(1)
    rows = {}
    for name in names:
        loads, builds = [], []
        for _ in range(repeat):
            t0 = time.perf_counter()
            config = transformers.AutoConfig.from_pretrained(zoo / name)
            model = getattr(transformers, config.architectures[0]).from_pretrained(
                zoo / name, config=config
            )
            model.eval()
            loads.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            spec = InputSpec.of(
                model,
                config=config,
                tokenizer=None,
                batch=1,
                seq_len=16,
                device="cpu",
                float_dtype=torch.float32,
                train=False,
            )
            build_workload(spec, "prefill", 1)
            builds.append(time.perf_counter() - t0)
        load, build = statistics.median(loads), statistics.median(builds)
        rows[name] = {
            "load_ms": round(load * 1e3, 2),
            "inputs_ms": round(build * 1e3, 3),
            "ratio": round(build / load, 4),
        }
    ratios = [r["ratio"] for r in rows.values()]
    inputs = [r["inputs_ms"] for r in rows.values()]
    return {
        "per_model": rows,
        "median_inputs_ms": round(statistics.median(inputs), 3),
        "max_inputs_ms": max(inputs),
        "median_ratio_to_load": round(statistics.median(ratios), 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tracers", default=",".join(TRACERS))
    parser.add_argument("--only", default="", help="zoo entries (default: all)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--skip-run", action="store_true", help="only (b), input overhead")
    parser.add_argument("--weights", choices=["real", "fake"], default="real")
    args = parser.parse_args()
    from kerneltracer.worker.frameworks.huggingface.zoo import ZOO, build_zoo

    names = [n for n in args.only.split(",") if n] or [e.name for e in ZOO]
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        build_zoo(work / "zoo", names)
        out["input_overhead"] = input_overhead(work / "zoo", names, args.repeat)
        o = out["input_overhead"]
        print(
            f"(b) input building: median {o['median_inputs_ms']} ms, max {o['max_inputs_ms']} "
            f"ms per job; median {o['median_ratio_to_load']:.2%} of loading the model"
        )
        if not args.skip_run:
            tracers = [t for t in args.tracers.split(",") if t]
            out["matrix"] = m = run_matrix(
                work / "zoo", names, tracers, args.jobs, work, args.weights
            )
            print(
                f"(a) {len(names)} architectures x {len(tracers)} tracers x 2 modes, "
                f"weights {args.weights}: "
                f"{m['ok']}/{m['jobs'] - m['skipped_group_alternatives']} ok "
                f"({m['ok_share']:.1%}) in {m['wall_s']} s"
            )
            for tracer, counts in m["per_tracer"].items():
                print(f"    {tracer:20} {dict(counts)}")
            for row in m["not_ok"]:
                if row["status"] != "skipped":
                    print(f"    {row['status']:12} {row['job']}: {row['reason']}")
    dest = REPO / "bench" / "out"
    dest.mkdir(parents=True, exist_ok=True)
    name = "zoo.json" if args.weights == "real" else f"zoo-{args.weights}.json"
    (dest / name).write_text(json.dumps(out, indent=2))
    print(f"written {dest / name}")


if __name__ == "__main__":
    main()
