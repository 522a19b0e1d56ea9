"""A tiny Qwen3-MoE (4 experts, top 2, two layers) beside the suite's tiny Llama, sharing its
tokenizer: a model with both a tensor-parallel plan for its experts and an expert-parallel
plan, small enough for real ranks on this CPU."""

from __future__ import annotations

import shutil
from pathlib import Path


def build_tiny_moe(llama: Path, out: Path) -> Path:
    import torch
    import transformers
    from transformers import Qwen3MoeConfig, Qwen3MoeForCausalLM

    if (out / "config.json").is_file():
        return out
    vocab = transformers.AutoConfig.from_pretrained(llama).vocab_size
    config = Qwen3MoeConfig(
        vocab_size=vocab,
        hidden_size=128,
        intermediate_size=256,
        moe_intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=32,
        num_experts=4,
        num_experts_per_tok=2,
        decoder_sparse_step=1,
        mlp_only_layers=[],
        max_position_embeddings=512,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=2,
        tie_word_embeddings=False,
    )
    torch.manual_seed(0)
    Qwen3MoeForCausalLM(config).save_pretrained(str(out))
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        if (llama / name).is_file():
            shutil.copy(llama / name, out / name)
    return out
