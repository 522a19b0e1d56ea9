"""The FX optimiser's models: a built-in test model, or a causal LM from a local directory.

For ``kerneltracer fx optimize MODEL_SPEC``, which runs a model in its own process rather
than in a worker: the transformers side of it lives here with the other huggingface loading
code, so ``kerneltracer.fx`` needs torch only and sits below the worker.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kerneltracer.errors import UsageError, choices


def load_causal_lm(directory: Path, seq_len: int) -> tuple[Any, tuple[Any, ...]]:
    """The model (no KV cache, so one forward is one graph) and random token ids for it."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    try:
        config = AutoConfig.from_pretrained(directory, local_files_only=True)
        config.use_cache = False
        model = AutoModelForCausalLM.from_pretrained(
            directory, config=config, local_files_only=True
        )
    except (OSError, ValueError, KeyError) as exc:
        raise UsageError(f"{directory}: cannot load as a Hugging Face causal LM: {exc}") from exc
    vocab = int(getattr(config, "vocab_size", 0)) or 2
    return model, (torch.randint(0, vocab, (1, seq_len)),)


def load_model(spec: str, seq_len: int = 32, seed: int = 0) -> tuple[Any, tuple[Any, ...]]:
    """``spec`` is a built-in model name (:mod:`kerneltracer.fx.models`) or a local HF
    model directory."""
    import torch

    from kerneltracer.fx.models import BUILTIN

    torch.manual_seed(seed)
    if spec in BUILTIN:
        entry = BUILTIN[spec]
        model = entry.build().train(entry.train)
        return model, entry.inputs()
    path = Path(spec)
    if (path / "config.json").is_file():
        model, inputs = load_causal_lm(path, seq_len)
        return model.train(), inputs
    raise UsageError(
        f"unknown model {spec!r}: not a directory with config.json, nor a "
        f"built-in model ({choices(BUILTIN)})"
    )
