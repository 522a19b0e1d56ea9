"""Corpus build on a 500-model synthetic run, and replay throughput on the tiny models.

1. corpus build: the report's synthetic run (tests.support.synthetic_run), restricted to
   torch_dispatch, with a dispatch_ops.jsonl per model of ~120 signatures drawn from 30
   shape families (models of one family share signatures, as real model families do).
   Measured in a fresh subprocess each (imports before the clock): ours = build_corpus +
   write_corpus (Parquet, operator_inp logs, summary), against pandas by hand
   (read_json lines per job, a signature key column, groupby, to_parquet).
2. replay throughput: the tiny models (Llama eval + train, GPT-2, BERT) traced by real
   torch_dispatch workers, then `replay` of the whole corpus on CPU, in signatures/s,
   against the naive isolation of one worker process per signature (--batch-size 1),
   both on the BASELINE_TOP most-called signatures (a process per signature is slow).

Usage: python bench/bench_corpus.py [--models 500] [--repeat 3] [--skip-replay]
Results are printed and written to bench/out/corpus.json. Times are medians.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.support.synthetic_run import make_synthetic_run  # noqa: E402

SIGS_PER_MODEL = 120
BASELINE_TOP = 24
FAMILIES = 30
_OPS = [
    "aten.mm.default", "aten.addmm.default", "aten.bmm.default", "aten.add.Tensor",
    "aten.mul.Tensor", "aten.view.default", "aten._softmax.default", "aten.gelu.default",
    "aten.native_layer_norm.default", "aten.embedding.default", "aten.index.Tensor",
    "aten.cat.default", "aten.t.default", "aten.transpose.int", "aten.silu.default",
    "aten.rsqrt.default", "aten.mean.dim", "aten.pow.Tensor_Scalar", "aten.clone.default",
    "aten._to_copy.default",
]  # fmt: skip


def _tensor(shape: list[int], dtype: str = "float32", **extra: Any) -> dict[str, Any]:
    stride, acc = [], 1
    for size in reversed(shape):
        stride.append(acc)
        acc *= size
    return {"shape": shape, "dtype": dtype, "device": "cpu", "stride": stride[::-1], **extra}


def _rows(i: int) -> bytes:
    family = i % FAMILIES
    hidden, seq = 64 * (1 + family % 10), 16 * (1 + family // 10)
    lines = []
    for k in range(SIGS_PER_MODEL):
        op = _OPS[k % len(_OPS)]
        width = hidden * (1 + k // len(_OPS))
        inputs = [_tensor([seq, width]), _tensor([width, hidden])]
        if op in ("aten.embedding.default", "aten.index.Tensor"):
            inputs.append(_tensor([1, seq], "int64", min=0, max=width - 1 - i % 7))
        row = {
            "op": op,
            "phase": "forward",
            "count": 1 + (i + k) % 24,
            "inputs": inputs,
            "kwargs": {},
            "outputs": [_tensor([seq, hidden])],
            "modules": {f"model.layers.{n}.mlp": 1 for n in range(1 + k % 3)},
        }
        lines.append(orjson.dumps(row))
    return b"\n".join(lines) + b"\n"


def make_corpus_run(run: Path, n_models: int) -> None:
    make_synthetic_run(run, n_models, tracers=("torch_dispatch",))
    for i, job in enumerate(sorted(run.glob("jobs/*/torch_dispatch"))):
        if (job / "dispatch_summary.json").exists():
            (job / "dispatch_ops.jsonl").write_bytes(_rows(i))


def child_ours(run: Path, out: Path) -> None:
    from kerneltracer.corpus.build import build_corpus
    from kerneltracer.corpus.export import write_corpus

    write_corpus(build_corpus(run), out)


def child_pandas(run: Path, out: Path) -> None:
    import pandas as pd

    frames = []
    for status_path in sorted(run.glob("jobs/*/torch_dispatch/_TRACE_STATUS.json")):
        try:
            st = json.loads(status_path.read_text())
        except ValueError:
            continue
        if st["status"] != "ok":
            continue
        df = pd.read_json(status_path.parent / "dispatch_ops.jsonl", lines=True)
        df["model"] = st["model"]["display"]
        frames.append(df)
    rows = pd.concat(frames, ignore_index=True)
    rows["sig"] = rows["op"] + rows["inputs"].map(json.dumps) + rows["kwargs"].map(json.dumps)
    agg = rows.groupby(["sig", "op"], as_index=False).agg(
        calls=("count", "sum"), models=("model", lambda m: sorted(set(m)))
    )
    out.mkdir(parents=True, exist_ok=True)
    agg.to_parquet(out / "corpus.parquet")


def _child(argv: list[str]) -> None:
    kind, *paths = argv
    import pandas  # noqa: F401
    import pyarrow.parquet  # noqa: F401

    t0 = time.perf_counter()
    {"ours": child_ours, "pandas": child_pandas}[kind](*[Path(p) for p in paths])
    took = time.perf_counter() - t0
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": took, "peak_rss_mb": rss_mb}))


def _measure(kind: str, *paths: Path) -> dict[str, float]:
    proc = subprocess.run(
        [sys.executable, __file__, "--child", kind, *map(str, paths)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def bench_build(n_models: int, repeat: int) -> dict[str, Any]:
    results: dict[str, list[dict[str, float]]] = {"ours": [], "pandas": []}
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        make_corpus_run(run, n_models)
        for i in range(repeat):
            results["ours"].append(_measure("ours", run, Path(tmp) / f"ours{i}"))
            results["pandas"].append(_measure("pandas", run, Path(tmp) / f"pandas{i}"))
        summary = json.loads((Path(tmp) / "ours0" / "corpus_summary.json").read_text())
    out: dict[str, Any] = {
        kind: {
            "median_s": statistics.median(r["seconds"] for r in runs),
            "runs_s": [round(r["seconds"], 3) for r in runs],
            "peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
        }
        for kind, runs in results.items()
    }
    out["ratio_ours_over_pandas"] = out["ours"]["median_s"] / out["pandas"]["median_s"]
    out["models"] = len(summary["models"])
    out["signatures"] = summary["signatures"]
    return out


def _kt(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "kerneltracer.cli.main", *args]
    return subprocess.run(cmd, check=True, capture_output=True, text=True, env=env, cwd=REPO)


def bench_replay(repeat: int) -> dict[str, Any]:
    import os

    import yaml

    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    res: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _kt("models", "build-tiny", str(root / "models"), env=env)
        names = ["tiny-llama", "tiny-gpt2", "tiny-bert"]
        models: list[dict[str, Any]] = [{"path": str(root / "models" / n)} for n in names]
        models.append({"path": str(root / "models" / "tiny-llama"), "mode": "train"})
        cfg = {"output_dir": str(root / "run"), "models": models,
               "defaults": {"tracers": ["torch_dispatch"], "seq_len": 16}}  # fmt: skip
        (root / "config.yaml").write_text(yaml.safe_dump(cfg))
        _kt("run", str(root / "config.yaml"), "--jobs", "2", env=env)
        _kt("corpus", str(root / "run"), "-o", str(root / "corpus"), env=env)
        n = json.loads((root / "corpus" / "corpus_summary.json").read_text())["signatures"]
        runs = (
            ("batched", []),
            ("top_batched", ["--top", str(BASELINE_TOP)]),
            ("top_per_signature", ["--top", str(BASELINE_TOP), "--batch-size", "1"]),
        )
        for i in range(repeat):
            for kind, extra in runs:
                t0 = time.perf_counter()
                proc = subprocess.run(
                    [sys.executable, "-m", "kerneltracer.cli.main", "replay",
                     str(root / "corpus"), "-o", str(root / f"{kind}{i}"), "--repeats", "5",
                     *extra],
                    capture_output=True, text=True, env=env, cwd=REPO,
                )  # fmt: skip
                res.setdefault(kind, []).append(time.perf_counter() - t0)
                if proc.returncode not in (0, 1):
                    raise SystemExit(proc.stderr)
        counts = json.loads((root / "batched0" / "replay.json").read_text())["counts"]
    med = {k: statistics.median(v) for k, v in res.items()}
    return {
        "signatures": n,
        "counts": counts,
        "batched_sigs_per_s": n / med["batched"],
        "top_batched_sigs_per_s": BASELINE_TOP / med["top_batched"],
        "top_per_signature_sigs_per_s": BASELINE_TOP / med["top_per_signature"],
        "speedup_over_per_signature": med["top_per_signature"] / med["top_batched"],
        "runs_s": {k: [round(x, 2) for x in v] for k, v in res.items()},
    }


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _child(sys.argv[2:])
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-replay", action="store_true")
    args = parser.parse_args()
    summary: dict[str, Any] = {"build": bench_build(args.models, args.repeat)}
    b = summary["build"]
    print(
        f"corpus build, {b['models']} models / {b['signatures']} signatures: "
        f"ours median {b['ours']['median_s']:.2f}s ({b['ours']['peak_rss_mb']:.0f} MB), "
        f"pandas {b['pandas']['median_s']:.2f}s; ours/pandas {b['ratio_ours_over_pandas']:.2f}x"
    )
    if not args.skip_replay:
        summary["replay"] = r = bench_replay(args.repeat)
        print(
            f"replay of {r['signatures']} tiny-model signatures on CPU ({r['counts']}): "
            f"{r['batched_sigs_per_s']:.1f} sig/s (wall time of the CLI, process starts "
            f"included); top {BASELINE_TOP}: {r['top_batched_sigs_per_s']:.1f} sig/s batched vs "
            f"{r['top_per_signature_sigs_per_s']:.1f} sig/s one process per signature "
            f"({r['speedup_over_per_signature']:.1f}x)"
        )
    out = REPO / "bench" / "out" / "corpus.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(summary, indent=2) + "\n")
    print(f"written to {out}")


if __name__ == "__main__":
    main()
