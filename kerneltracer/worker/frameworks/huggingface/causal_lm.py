"""A causal LM from a local directory.

For the FX optimiser (``kerneltracer fx optimize DIR``), which runs a model in its own
process rather than in a worker: the transformers side of it lives here with the other
huggingface loading code, so ``kerneltracer.fx`` needs torch only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kerneltracer.errors import UsageError


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
