"""Fidelity probe: real published hub configs at full size on fake tensors, no weights.

For each config dir (default: every one under tests/fixtures/hub_configs) a fresh process
builds the model class named by ``architectures`` from the config in the config's dtype,
with no storage, feeds fake inputs at --seq-len (encoder-decoders: decoder ids too; VLMs:
pixel values at the vision config's size and one image's placeholder tokens) and runs one
no-grad forward under a recording TorchDispatchMode. Reported per model and device:
ok / the exception line, seconds (build, forward), peak RSS, aten calls, whether the
recorded matmul weights and attention geometry equal the config (tests/fakeweights/shapes),
which attention op ran and which fused ops appeared.

Two ways to get fake tensors:
  cpu   the model is built inside FakeTensorMode (what `weights: fake` does);
  cuda  built on the meta device, then every parameter and buffer becomes a fake tensor on
        cuda:0 (FakeTensorConverter.from_meta_and_device): the only way to get fake CUDA
        tensors from a CPU-only torch, where anything that initialises CUDA raises.

Usage: python bench/probe_fake_configs.py [DIR...] [--seq-len 4096] [--device cpu,cuda]
Results are printed and written to bench/out/probe_fake_configs.json.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
# LLaVA-style models check, on the token values, that the image placeholders match the
# image features; fake ids have no values, so that check cannot be answered (the shapes
# are fixed either way).
os.environ.setdefault("TRANSFORMERS_DISABLE_TORCH_CHECK", "1")

import argparse
import json
import resource
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
CONFIGS = REPO / "tests" / "fixtures" / "hub_configs"
OUT = REPO / "bench" / "out" / "probe_fake_configs.json"
# Ops that show which kernels a backend would be asked for (beyond plain mm and pointwise).
FUSED = (
    "attention",
    "_grouped_mm",
    "rms_norm",
    "layer_norm",
    "_softmax",
    "gelu",
    "silu",
    "embedding",
    "conv",
    "topk",
    "histc",
    "sort",
    "masked_scatter",
)


def probe(config_dir: Path, device: str, seq_len: int) -> dict[str, Any]:
    """One model on one device, in this process."""
    import torch
    import transformers

    from tests.fakeweights.shapes import expected, missing

    torch.set_num_threads(1)
    config = transformers.AutoConfig.from_pretrained(config_dir)
    dtype = config.dtype or torch.float32
    t0 = time.perf_counter()
    model, fake_mode, to_fake = _build(transformers, torch, config, dtype, device)
    t1 = time.perf_counter()
    inputs = _inputs(torch, config, seq_len, dtype, to_fake)
    recorder = _recorder(torch)
    with fake_mode, torch.no_grad(), recorder:
        model(**inputs)
    t2 = time.perf_counter()
    calls = [(op, shapes) for (op, shapes) in recorder.signatures]
    gaps = missing(expected(config.to_dict()), calls)
    fused = Counter({op: n for op, n in recorder.counts.items() if any(f in op for f in FUSED)})
    return {
        "build_s": round(t1 - t0, 2),
        "forward_s": round(t2 - t1, 2),
        "aten_calls": sum(recorder.counts.values()),
        "dtype": str(dtype).removeprefix("torch."),
        "shapes_ok": not gaps,
        "shape_gaps": gaps,
        "attention_ops": sorted(op for op in fused if "attention" in op),
        "fused_ops": dict(sorted(fused.items())),
        "inputs": {k: list(v.shape) for k, v in inputs.items()},
    }


def _build(transformers: Any, torch: Any, config: Any, dtype: Any, device: str) -> Any:
    from torch._subclasses.fake_tensor import FakeTensorMode

    cls = getattr(transformers, config.architectures[0])
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    # "cuda" alone would make torch ask the (absent) CUDA runtime for the current index.
    target = torch.device(device if device == "cpu" or ":" in device else f"{device}:0")

    def to_fake(meta: Any) -> Any:
        return mode.fake_tensor_converter.from_meta_and_device(mode, meta, target)

    if device == "cpu":
        with mode:
            model = cls._from_config(config, dtype=dtype).eval()
        return model, mode, to_fake
    with torch.device("meta"):
        model = cls._from_config(config, dtype=dtype).eval()
    for module in model.modules():
        for name, p in list(module._parameters.items()):
            if p is not None:
                module._parameters[name] = torch.nn.Parameter(to_fake(p), requires_grad=False)
        for name, b in list(module._buffers.items()):
            if b is not None:
                module._buffers[name] = to_fake(b)
    return model, mode, to_fake


def _inputs(torch: Any, config: Any, seq_len: int, dtype: Any, to_fake: Any) -> dict[str, Any]:
    def meta(*shape: int, dt: Any = torch.long) -> Any:
        return to_fake(torch.empty(*shape, dtype=dt, device="meta"))

    inputs = {"input_ids": meta(1, seq_len)}
    if config.is_encoder_decoder:
        inputs["decoder_input_ids"] = meta(1, seq_len)
    vision = getattr(config, "vision_config", None)
    if vision is not None:
        size = vision.image_size
        inputs["pixel_values"] = meta(1, getattr(vision, "num_channels", 3), size, size, dt=dtype)
    return inputs


def _recorder(torch: Any) -> Any:
    from torch.utils._python_dispatch import TorchDispatchMode

    class Recorder(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.counts: Counter[str] = Counter()
            self.signatures: set[tuple[str, tuple[tuple[int, ...], ...]]] = set()

        def __torch_dispatch__(
            self, func: Any, types: Any, args: Any = (), kwargs: Any = None
        ) -> Any:
            op = str(func)
            self.counts[op] += 1
            shapes = tuple(
                tuple(int(s) for s in a.shape) for a in args if isinstance(a, torch.Tensor)
            )
            self.signatures.add((op, shapes))
            return func(*args, **(kwargs or {}))

    return Recorder()


def run_one(config_dir: Path, device: str, seq_len: int) -> dict[str, Any]:
    """Probe in a child process: its peak RSS is the model's alone, a crash stays there."""
    cmd = [
        sys.executable,
        __file__,
        "--one",
        str(config_dir),
        "--device",
        device,
        "--seq-len",
        str(seq_len),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    row: dict[str, Any] = {"model": config_dir.name.replace("--", "/", 1), "device": device}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode == 0 and lines:
        row.update(json.loads(lines[-1]))
        return row
    row["error"] = _last_error(proc.stderr) or f"exit {proc.returncode}"
    return row


def _last_error(stderr: str) -> str:
    """The exception line, and the last frame in transformers (where the model needed it)."""
    lines = stderr.splitlines()
    errors = [
        ln
        for ln in lines
        if ln and not ln.startswith((" ", "\t")) and ("Error" in ln or "Exception" in ln)
    ]
    frames = [ln.strip() for ln in lines if ln.startswith("  File ") and "transformers/" in ln]
    where = ""
    if frames:
        path, _, rest = frames[-1].removeprefix('File "').partition('", ')
        line = rest.split(",")[0].removeprefix("line ")
        where = f" (at {path.split('site-packages/')[-1]}:{line})"
    return ((errors or [""])[-1] + where)[:400]


def op_choices(device: str) -> dict[str, list[str]]:
    """Which aten ops single calls dispatch to on fake tensors of ``device`` (no model)."""
    import torch
    import torch.nn.functional as F
    from torch._subclasses.fake_tensor import FakeTensorMode

    mode = FakeTensorMode()
    target = torch.device("cpu" if device == "cpu" else f"{device}:0")

    def t(*shape: int, dt: Any = torch.bfloat16) -> Any:
        meta = torch.empty(*shape, dtype=dt, device="meta")
        return mode.fake_tensor_converter.from_meta_and_device(mode, meta, target)

    cases = {
        "sdpa bf16 causal (1,32,4096,128)": lambda: F.scaled_dot_product_attention(
            t(1, 32, 4096, 128), t(1, 32, 4096, 128), t(1, 32, 4096, 128), is_causal=True
        ),
        "sdpa bf16 GQA enable_gqa (32 q / 8 kv heads)": lambda: F.scaled_dot_product_attention(
            t(1, 32, 4096, 128),
            t(1, 8, 4096, 128),
            t(1, 8, 4096, 128),
            is_causal=True,
            enable_gqa=True,
        ),
        "sdpa bf16 MLA (qk 192, v 128)": lambda: F.scaled_dot_product_attention(
            t(1, 128, 1024, 192), t(1, 128, 1024, 192), t(1, 128, 1024, 128), is_causal=True
        ),
        "rms_norm bf16": lambda: F.rms_norm(t(1, 16, 4096), (4096,), t(4096), 1e-5),
        "layer_norm bf16": lambda: F.layer_norm(t(1, 16, 4096), (4096,), t(4096), t(4096)),
        "silu bf16": lambda: F.silu(t(16, 4096)),
        "_grouped_mm bf16": lambda: torch._grouped_mm(
            t(64, 4096), t(8, 4096, 1024), offs=t(8, dt=torch.int32)
        ),
        "x[..., None] (Python indexing)": lambda: t(4, 8)[..., None],
    }
    out: dict[str, list[str]] = {}
    for name, call in cases.items():
        recorder = _recorder(torch)
        try:
            with mode, recorder:
                call()
            ops = [op for op in recorder.counts if not op.startswith("prim.")]
            out[name] = [
                op.removeprefix("aten.").removesuffix(".default")
                for op in ops
                if "empty" not in op and "_to_copy" not in op
            ]
        except Exception as e:  # the finding is the failure itself
            out[name] = [f"ERROR {type(e).__name__}: {str(e).splitlines()[0][:120]}"]
    return out


def print_table(rows: list[dict[str, Any]]) -> None:
    head = (
        f"{'model':38} {'dev':4} {'result':7} {'build s':>7} {'fwd s':>6} {'RSS MB':>6} "
        f"{'aten':>6} {'shapes':6} attention"
    )
    print(head)
    for r in rows:
        if "error" in r:
            print(f"{r['model']:38} {r['device']:4} error   {r['error']}")
            continue
        attn = (
            ",".join(a.removeprefix("aten.").removesuffix(".default") for a in r["attention_ops"])
            or "math (bmm + softmax)"
        )
        print(
            f"{r['model']:38} {r['device']:4} ok      {r['build_s']:7} {r['forward_s']:6} "
            f"{r['peak_rss_mb']:6} {r['aten_calls']:6} "
            f"{'equal' if r['shapes_ok'] else 'DIFF':6} "
            f"{attn}"
        )
        for gap in r["shape_gaps"]:
            print(f"{'':46} {gap}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dirs", nargs="*", type=Path)
    parser.add_argument("--seq-len", type=int, default=4096)
    parser.add_argument("--device", default="cpu,cuda", help="comma-separated: cpu, cuda")
    parser.add_argument("--one", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one is not None:
        result = probe(args.one, args.device, args.seq_len)
        result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
        print(json.dumps(result))
        return
    dirs = args.dirs or sorted(p for p in CONFIGS.iterdir() if (p / "config.json").is_file())
    devices = args.device.split(",")
    rows = [run_one(d, dev, args.seq_len) for dev in devices for d in dirs]
    print_table(rows)
    choices = {dev: op_choices(dev) for dev in devices}
    for dev, cases in choices.items():
        print(f"\nsingle ops on fake {dev} tensors:")
        for name, ops in cases.items():
            print(f"  {name:46} {' '.join(ops)}")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(
        json.dumps({"seq_len": args.seq_len, "rows": rows, "op_choices": choices}, indent=1)
    )
    print(f"\nwritten: {OUT.relative_to(REPO)}")


if __name__ == "__main__":
    main()
