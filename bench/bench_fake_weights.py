"""Full-size models on fake weights through the real CLI: seconds and peak RSS per model,
and the corpus build on the resulting run.

Every published config under tests/fixtures/hub_configs (7B-405B decoders, DeepSeek-V3,
Mixtral-8x22B, a Qwen MoE, flan-t5-xxl, LLaVA-1.5) is one model of one run config
(`weights: fake`, torch_dispatch, --seq-len tokens, local paths: no hub, nothing
downloaded). The run is repeated --repeat times with --force and -j 1, so no two workers
share the cores; per model it reports medians of the job's wall time as the orchestrator
saw it (`duration_s`), its phases (load = imports and the build from the config, warmup =
the untraced forward every job runs first, trace = the forward under the recorder, write =
dispatch_ops.jsonl and friends) and the worker tree's peak RSS.
Then `kerneltracer corpus` on the last run, --repeat times (median), with its output size.

--tracers runs other tracers instead (print_fx,print_aten: the graph tracers at full depth;
their "sigs" column is the node count of the first graph). Each run also reports the CPU
seconds of the whole `kerneltracer run` (orchestrator, server and workers; the machine is
shared, so CPU seconds are the figure to compare) and the load average when it ended.

Usage: python bench/bench_fake_weights.py [--seq-len 4096] [--repeat 3] [--only SUBSTR,...]
       [--tracers torch_dispatch,...]
Results are printed and written to bench/out/fake_weights.json.
"""

from __future__ import annotations

import argparse
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

import yaml

REPO = Path(__file__).resolve().parent.parent
CONFIGS = REPO / "tests" / "fixtures" / "hub_configs"
OUT = REPO / "bench" / "out" / "fake_weights.json"
KT = [sys.executable, "-m", "kerneltracer.cli.main"]


def run_once(
    dirs: list[Path], seq_len: int, work: Path, tracers: list[str]
) -> dict[str, dict[str, Any]]:
    """One `kerneltracer run --force -j 1` of every model; per job its status numbers."""
    cfg = work / "fake.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "output_dir": str(work / "run"),
                "defaults": {
                    "weights": "fake",
                    "seq_len": seq_len,
                    "tracers": tracers,
                    "timeout_s": 1200,
                },
                "models": [{"path": str(d), "name": d.name} for d in dirs],
            }
        )
    )
    env = dict(os.environ, OMP_NUM_THREADS="1")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(
        [*KT, "run", str(cfg), "--force", "-j", "1"], env=env, capture_output=True, text=True
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    print(f"  run CPU {cpu:.1f} s, load {os.getloadavg()[0]:.2f}", flush=True)
    rows: dict[str, dict[str, Any]] = {}
    for d in dirs:
        for tracer in tracers:
            name = d.name if tracer == "torch_dispatch" else f"{d.name} {tracer}"
            rows[name] = _row(work / "run" / "jobs" / d.name / tracer, proc.stderr)
    return rows


def _row(job_dir: Path, stderr: str) -> dict[str, Any]:
    status_file = job_dir / "_TRACE_STATUS.json"
    if not status_file.is_file():
        return {"status": "missing", "reason": stderr[-300:]}
    st = json.loads(status_file.read_text())
    ops = job_dir / "dispatch_ops.jsonl"
    index = job_dir / "graphs" / "index.json"
    if ops.is_file():
        signatures = sum(1 for _ in ops.open())
    elif index.is_file():
        signatures = json.loads(index.read_text())["graphs"][0]["nodes"]
    else:
        signatures = 0
    return {
        "status": st["status"],
        "reason": st.get("reason"),
        "duration_s": st.get("duration_s"),
        "phases": st.get("phases") or {},
        "peak_rss_mb": round((st.get("peak_rss_bytes") or 0) / 2**20),
        "signatures": signatures,
    }


def time_corpus(run_dir: Path, out: Path, repeat: int) -> dict[str, Any]:
    """`kerneltracer corpus` wall time (median of ``repeat``, each a fresh process)."""
    walls = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        proc = subprocess.run(
            [*KT, "corpus", str(run_dir), "-o", str(out)], capture_output=True, text=True
        )
        walls.append(time.perf_counter() - t0)
        if proc.returncode != 0:
            return {"error": proc.stderr[-500:]}
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    return {
        "median_s": round(statistics.median(walls), 2),
        "runs_s": [round(w, 2) for w in walls],
        "output_mb": round(size / 2**20, 2),
    }


def summarise(runs: list[dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Per model: medians over the runs where the job ended ok."""
    table = {}
    for name in runs[0]:
        oks = [r[name] for r in runs if r[name]["status"] == "ok"]
        if not oks:
            table[name] = {"status": runs[-1][name]["status"], "reason": runs[-1][name]["reason"]}
            continue

        def med(get: Any, oks: list[dict[str, Any]] = oks) -> float:
            return round(statistics.median(get(r) for r in oks), 2)

        table[name] = {
            "status": "ok",
            "runs_ok": len(oks),
            "wall_s": med(lambda r: r["duration_s"]),
            "load_s": med(lambda r: r["phases"].get("load", 0.0)),
            "warmup_s": med(lambda r: r["phases"].get("warmup", 0.0)),
            "trace_s": med(lambda r: r["phases"].get("trace", 0.0)),
            "write_s": med(lambda r: r["phases"].get("write", 0.0)),
            "peak_rss_mb": med(lambda r: r["peak_rss_mb"]),
            "signatures": oks[-1]["signatures"],
        }
    return table


def print_table(table: dict[str, dict[str, Any]], corpus: dict[str, Any]) -> None:
    print(
        f"{'model':38} {'wall s':>7} {'load s':>7} {'warmup s':>8} {'trace s':>7} {'write s':>7} "
        f"{'RSS MB':>7} {'sigs':>5}"
    )
    for name, r in table.items():
        model = name.replace("--", "/", 1)
        if r["status"] != "ok":
            print(f"{model:38} {r['status']}: {r['reason']}")
            continue
        print(
            f"{model:38} {r['wall_s']:7} {r['load_s']:7} {r['warmup_s']:8} {r['trace_s']:7} "
            f"{r['write_s']:7} "
            f"{r['peak_rss_mb']:7} {r['signatures']:5}"
        )
    if "error" in corpus:
        print(f"corpus: failed: {corpus['error']}")
    else:
        print(
            f"corpus of the run ({len(table)} models): {corpus['median_s']} s median "
            f"(runs {corpus['runs_s']}), {corpus['output_mb']} MB written"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq-len", type=int, default=4096)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", default="", help="comma-separated substrings of dir names")
    parser.add_argument("--tracers", default="torch_dispatch", help="comma-separated tracers")
    args = parser.parse_args()
    wanted = [s for s in args.only.split(",") if s]
    dirs = [
        p
        for p in sorted(CONFIGS.iterdir())
        if (p / "config.json").is_file() and (not wanted or any(w in p.name for w in wanted))
    ]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        runs = []
        for i in range(args.repeat):
            t0 = time.perf_counter()
            runs.append(run_once(dirs, args.seq_len, work, args.tracers.split(",")))
            print(f"run {i + 1}/{args.repeat}: {time.perf_counter() - t0:.0f} s", flush=True)
        table = summarise(runs)
        corpus = time_corpus(work / "run", work / "corpus", args.repeat)
    print_table(table, corpus)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(
        json.dumps(
            {
                "seq_len": args.seq_len,
                "repeat": args.repeat,
                "tracers": args.tracers.split(","),
                "models": table,
                "corpus": corpus,
            },
            indent=1,
        )
    )
    print(f"written: {OUT.relative_to(REPO)}")


if __name__ == "__main__":
    main()
