"""Estimated op costs of a large synthetic corpus: seconds and peak RSS.

The corpus is --signatures signatures (default 50,000) over --models models, drawn from
the op mix of real transformer corpora: matmuls (mm / addmm / bmm), sdpa, convolutions,
norms, embeddings, elementwise ops, reductions, copies and views, at LLM-sized shapes,
each called by a few models from a few module paths. Each measurement runs in a fresh
subprocess (the corpus is synthesised before the clock starts) and reports:

- estimate: ``signature_costs`` (FLOPs and bytes of every signature);
- breakdown: per op / module / model sums with the roofline on H100;
- write: the four cost CSVs;
- corpus: the whole ``write_corpus`` (Parquet, operator_inp logs, summary, costs), to
  show the cost model's share of a corpus build;
- peak RSS of the process, and its RSS after synthesis (the corpus itself).

Usage: python bench/bench_costmodel.py [--signatures 50000] [--models 200] [--repeat 3]
Results are printed and written to bench/out/costmodel.json. Times are medians.
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

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kerneltracer.core.signature import signature_id  # noqa: E402
from kerneltracer.corpus.model import Corpus, Signature  # noqa: E402


def _t(shape: list[int], dtype: str = "bfloat16") -> dict[str, Any]:
    stride, acc = [], 1
    for size in reversed(shape):
        stride.append(acc)
        acc *= size
    return {"shape": shape, "dtype": dtype, "device": "cuda", "stride": stride[::-1]}


def _call(i: int) -> tuple[str, list[Any], list[Any]]:
    """The i-th signature: an op of the mix at shapes that vary with i."""
    seq = 128 * (1 + i % 32)
    hidden = 1024 * (1 + (i // 32) % 8)
    kind = i % 20
    x = _t([seq, hidden])
    if kind < 4:
        w = _t([hidden, 4 * hidden])
        return "aten.mm.default", [x, w], [_t([seq, 4 * hidden])]
    if kind < 6:
        w = _t([hidden, hidden])
        return "aten.addmm.default", [_t([hidden]), x, w], [_t([seq, hidden])]
    if kind == 6:
        q = _t([1, 32, seq, 128])
        return ("aten._scaled_dot_product_flash_attention.default", [q, q, q, 0.0, True],
                [q, _t([1, 32, seq], "float32")])  # fmt: skip
    if kind == 7:
        a, b = _t([32, seq, 128]), _t([32, 128, seq])
        return "aten.bmm.default", [a, b], [_t([32, seq, seq])]
    if kind == 8:
        img, w = _t([8, 64, seq // 4, seq // 4]), _t([128, 64, 3, 3])
        args = [img, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1]
        return "aten.convolution.default", args, [_t([8, 128, seq // 4, seq // 4])]
    if kind == 9:
        return ("aten.native_layer_norm.default", [x, [hidden], _t([hidden]), _t([hidden]), 1e-5],
                [x, _t([seq, 1], "float32"), _t([seq, 1], "float32")])  # fmt: skip
    if kind == 10:
        ids = {**_t([1, seq], "int64"), "min": 0, "max": 32000}
        return "aten.embedding.default", [_t([32000, hidden]), ids], [_t([1, seq, hidden])]
    if kind < 14:
        op = ("aten.add.Tensor", "aten.mul.Tensor", "aten.silu.default")[kind - 11]
        return op, [x, x], [x]
    if kind == 14:
        return "aten._softmax.default", [x, -1, False], [x]
    if kind == 15:
        return "aten.sum.dim_IntList", [x, [-1]], [_t([seq])]
    if kind == 16:
        return "aten._to_copy.default", [x], [_t([seq, hidden], "float32")]
    if kind == 17:
        return "aten.cat.default", [[x, x], -1], [_t([seq, 2 * hidden])]
    if kind == 18:
        return "aten.view.default", [x, [seq * hidden]], [_t([seq * hidden])]
    return "aten.my_custom_op.default", [x], [x]  # no formula: listed as unknown


def synth_corpus(n: int, n_models: int) -> Corpus:
    sigs = []
    for i in range(n):
        op, inputs, outputs = _call(i)
        inputs = [*inputs, i]  # a distinct trailing scalar keeps every signature unique
        models = {f"org/model-{(i * 7 + k) % n_models:04d}": 1 + (i + k) % 24 for k in range(3)}
        paths = {f"model.layers.{(i + k) % 80}.mlp.up_proj": 1 for k in range(2)}
        phases = {"forward": sum(models.values())}
        sig_id = signature_id(op, inputs, {})
        by_model = {m: dict(paths) for m in models}
        sigs.append(Signature(sig_id, op, inputs, {}, outputs, phases, models, paths, by_model))
    sigs.sort(key=lambda s: (s.op, -s.calls, s.sig_id))
    return Corpus(tuple(sorted({m for s in sigs for m in s.model_calls})), sigs)


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _child(n: int, n_models: int, out: Path) -> None:
    from kerneltracer.corpus.costs import corpus_breakdown, signature_costs, write_costs
    from kerneltracer.corpus.export import write_corpus
    from kerneltracer.costmodel import load_devices

    corpus = synth_corpus(n, n_models)
    device = load_devices().get("H100")
    rss_corpus = _rss_mb()
    times = {}
    t0 = time.perf_counter()
    costs = signature_costs(corpus.signatures)
    times["estimate"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    estimated = corpus_breakdown(corpus.signatures, costs, device)
    times["breakdown"] = time.perf_counter() - t0
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    write_costs(estimated, out)
    times["write"] = time.perf_counter() - t0
    rss_costs = _rss_mb()
    t0 = time.perf_counter()
    write_corpus(corpus, out / "corpus", device)
    times["corpus"] = time.perf_counter() - t0
    unknown = sum(c is None for c in costs)
    print(json.dumps({"seconds": times, "rss_after_synth_mb": rss_corpus,
                      "peak_rss_costs_mb": rss_costs, "peak_rss_mb": _rss_mb(),
                      "unknown": unknown}))  # fmt: skip


def _measure(n: int, n_models: int, out: Path) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, __file__, "--child", str(n), str(n_models), str(out)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _child(int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4]))
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--signatures", type=int, default=50_000)
    parser.add_argument("--models", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            runs.append(_measure(args.signatures, args.models, Path(tmp) / f"out{i}"))
    med = {k: statistics.median(r["seconds"][k] for r in runs) for k in runs[0]["seconds"]}
    summary = {
        "signatures": args.signatures,
        "models": args.models,
        "median_s": med,
        "runs_s": [{k: round(v, 3) for k, v in r["seconds"].items()} for r in runs],
        "us_per_signature_estimate": med["estimate"] / args.signatures * 1e6,
        "cost_share_of_corpus_write": (med["estimate"] + med["breakdown"] + med["write"])
        / med["corpus"],
        "rss_after_synth_mb": max(r["rss_after_synth_mb"] for r in runs),
        "peak_rss_costs_mb": max(r["peak_rss_costs_mb"] for r in runs),
        "peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
        "unknown_signatures": runs[0]["unknown"],
    }
    print(
        f"{args.signatures} signatures, {args.models} models: estimate {med['estimate']:.2f}s "
        f"({summary['us_per_signature_estimate']:.1f} µs/signature), breakdown "
        f"{med['breakdown']:.2f}s, cost CSVs {med['write']:.2f}s; whole write_corpus "
        f"{med['corpus']:.2f}s (costs {summary['cost_share_of_corpus_write']:.0%} of it). "
        f"RSS: corpus {summary['rss_after_synth_mb']:.0f} MB, after costs "
        f"{summary['peak_rss_costs_mb']:.0f} MB, peak {summary['peak_rss_mb']:.0f} MB"
    )
    out = REPO / "bench" / "out" / "costmodel.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(summary, indent=2) + "\n")
    print(f"written to {out}")


if __name__ == "__main__":
    main()
