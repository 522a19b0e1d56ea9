"""vllm_profiler through kerneltracer vs the same profile taken by a bare vLLM script.

Both sides build the engine on the tiny Llama with the same profiler_config, generate once
untraced, then once between start_profile() and stop_profile(), and exit. Ours runs the
whole ``kerneltracer run`` (plan, worker, checks, op table, engine shutdown, status); the
bare script relies on vLLM's own shutdown at interpreter exit. Runs alternate, medians.

Usage: python bench/bench_vllm.py [--models models/tiny] [--python .venv-vllm/bin/python]
                                  [--repeat 3]
Results are printed and written to bench/out/vllm.json.
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

_BARE = r"""
import sys, time
if __name__ == "__main__":
    t0 = time.perf_counter()
    from vllm import LLM, SamplingParams
    llm = LLM(model=sys.argv[1], enforce_eager=True, dtype="auto", seed=0, max_model_len=256,
              kv_cache_memory_bytes=1 << 28, disable_log_stats=True,
              profiler_config={"profiler": "torch", "torch_profiler_dir": sys.argv[2],
                               "torch_profiler_record_shapes": True,
                               "torch_profiler_with_stack": False})
    t1 = time.perf_counter()
    params = SamplingParams(max_tokens=8, temperature=0.0, ignore_eos=True)
    prompts = [{"prompt_token_ids": [4 + (i * 7) % 508 for i in range(32)]}]
    llm.generate(prompts, params, use_tqdm=False)
    llm.start_profile()
    llm.generate(prompts, params, use_tqdm=False)
    llm.stop_profile()
    print(f"engine_s={t1 - t0:.3f}", flush=True)
"""


def _run_bare(python: Path, model: Path, out: Path, env: dict[str, str]) -> dict[str, float]:
    t0 = time.perf_counter()
    res = subprocess.run(
        [str(python), "-c", _BARE, str(model), str(out)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    wall = time.perf_counter() - t0
    engine = float(res.stdout.split("engine_s=")[1].split()[0])
    return {"wall_s": wall, "engine_s": engine}


def _run_ours(cfg: Path, run_dir: Path, env: dict[str, str]) -> dict[str, float]:
    t0 = time.perf_counter()
    res = subprocess.run([*KT, "run", str(cfg), "--force"], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    found = list(run_dir.glob("jobs/*/vllm_profiler/_TRACE_STATUS.json"))
    if not found:
        raise SystemExit(f"kerneltracer run wrote no status (exit {res.returncode}):\n{res.stderr}")
    status = json.loads(found[0].read_text())
    if status["status"] != "ok":
        raise SystemExit(f"vllm_profiler job ended {status['status']}: {status['reason']}")
    phases = status["phases"]
    return {
        "wall_s": wall,
        "engine_s": phases["load"],
        "shutdown_s": phases.get("shutdown", 0.0),
        "trace_bytes": status["summary"]["trace_bytes"],
        "events": status["summary"]["events"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=Path, default=REPO / "models" / "tiny")
    parser.add_argument("--python", type=Path, default=REPO / ".venv-vllm" / "bin" / "python")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    model = (args.models / "tiny-llama").resolve()
    env = dict(os.environ, OMP_NUM_THREADS="1")
    ours, bare = [], []
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "vllm.yaml"
        entry = {"path": str(model), "framework": "vllm", "tracers": ["vllm_profiler"]}
        cfg.write_text(
            yaml.safe_dump(
                {
                    "output_dir": str(Path(tmp) / "run"),
                    # absolute(), not resolve(): a venv's python is a symlink out of the venv.
                    "frameworks": {"vllm": {"python": str(args.python.absolute())}},
                    "models": [entry],
                }
            )
        )
        for i in range(args.repeat):
            bare_env = dict(env, TMPDIR=tmp, VLLM_RPC_BASE_PATH=tmp)
            bare.append(_run_bare(args.python, model, Path(tmp) / f"bare-{i}", bare_env))
            ours.append(_run_ours(cfg, Path(tmp) / "run", env))
            print(
                f"run {i + 1}: ours {ours[-1]['wall_s']:.1f} s, bare {bare[-1]['wall_s']:.1f} s",
                file=sys.stderr,
            )

    def med(rows: list[dict[str, float]], key: str) -> float:
        return statistics.median(r[key] for r in rows)

    result = {
        "repeat": args.repeat,
        "ours_wall_s": med(ours, "wall_s"),
        "bare_wall_s": med(bare, "wall_s"),
        "wall_ratio": med(ours, "wall_s") / med(bare, "wall_s"),
        "ours_engine_start_s": med(ours, "engine_s"),
        "bare_engine_start_s": med(bare, "engine_s"),
        "ours_shutdown_s": med(ours, "shutdown_s"),
        "trace_bytes": med(ours, "trace_bytes"),
        "trace_events": med(ours, "events"),
        "runs": {"ours": ours, "bare": bare},
    }
    out = REPO / "bench" / "out"
    out.mkdir(parents=True, exist_ok=True)
    (out / "vllm.json").write_text(json.dumps(result, indent=2))
    for key, value in result.items():
        if key != "runs":
            print(f"{key:>22}: {value:.3f}" if isinstance(value, float) else f"{key:>22}: {value}")


if __name__ == "__main__":
    main()
