"""A causal LM from a local directory, and a random-weight tiny Llama to write one.

For the FX optimiser (``kerneltracer fx optimize DIR``), which runs a model in its own
process rather than in a worker: the transformers side of it lives here with the other
huggingface loading code, so ``kerneltracer.fx`` needs torch only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kerneltracer.errors import UsageError


def build_tiny_llama(directory: Path, seed: int = 0) -> Path:
    """Write a random-weight tiny Llama (hidden 128, 4 heads, 2 layers, vocab 512)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        hidden_size=128,
        intermediate_size=256,
        num_attention_heads=4,
        num_key_value_heads=4,
        num_hidden_layers=2,
        vocab_size=512,
        max_position_embeddings=256,
        use_cache=False,
    )
    LlamaForCausalLM(config).save_pretrained(directory, safe_serialization=True)
    return directory


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
