"""Tiny random-weight models built offline: Llama, GPT-2, BERT and a Qwen3-MoE, with trained
tokenizers.

They load with ``AutoModel*/AutoTokenizer.from_pretrained(dir)`` under HF_HUB_OFFLINE=1 and
are deterministic (fixed seeds, fixed corpus). The Llama has head_dim 32 so vLLM can serve
it. Each model is built in a temp dir and renamed into place, so a dir that exists is whole.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kerneltracer.jsonio import atomic_write_json, read_json

BUILDER_VERSION = 1
MARKER = ".kerneltracer-tiny.json"
VOCAB = 512

_CORPUS = [
    "Kernel engineers want to know which operators a model really runs.",
    "The quick brown fox jumps over the lazy dog while the GPU idles.",
    "Attention, matmul, softmax, layer norm and embedding lookups dominate small models.",
    "Compilers fuse pointwise operators into one kernel and save memory bandwidth.",
    "Profilers record every operator with its input shapes, strides and data types.",
    "0 1 2 3 4 5 6 7 8 9 10 100 1000 3.14 2.71 1e-5",
]


def _corpus() -> list[str]:
    return [f"{line} {i}" for i in range(40) for line in _CORPUS]


def _bpe_tokenizer(special: list[str]) -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        special_tokens=special,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_corpus(), trainer=trainer)
    return tok


def _wordpiece_tokenizer() -> Any:
    from tokenizers import (
        Tokenizer,
        decoders,
        models,
        normalizers,
        pre_tokenizers,
        processors,
        trainers,
    )

    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(
        vocab_size=VOCAB, special_tokens=special, show_progress=False
    )
    tok.train_from_iterator(_corpus(), trainer=trainer)
    cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)],
    )
    return tok


def _save_tokenizer(tok: Any, out: Path, **special: str) -> None:
    from transformers import PreTrainedTokenizerFast

    fast = PreTrainedTokenizerFast(tokenizer_object=tok, model_max_length=256, **special)
    fast.save_pretrained(str(out))


def _llama(out: Path) -> None:
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = _bpe_tokenizer(["<unk>", "<s>", "</s>"])
    _save_tokenizer(
        tok, out, unk_token="<unk>", bos_token="<s>", eos_token="</s>", pad_token="</s>"
    )
    config = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=32,
        max_position_embeddings=512,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=2,
        tie_word_embeddings=False,
    )
    LlamaForCausalLM(config).save_pretrained(str(out))


def _moe(out: Path) -> None:
    """A Qwen3-MoE (4 experts, top 2) with the Llama's tokenizer: transformers ships both a
    tensor-parallel and an expert-parallel plan for it, and its 4 heads and 2 KV heads take
    TP 2, so real ranks on a laptop run an MoE at TP 2 or EP 2 (the zoo's MoEs have 1 KV
    head)."""
    from transformers import Qwen3MoeConfig, Qwen3MoeForCausalLM

    tok = _bpe_tokenizer(["<unk>", "<s>", "</s>"])
    _save_tokenizer(
        tok, out, unk_token="<unk>", bos_token="<s>", eos_token="</s>", pad_token="</s>"
    )
    config = Qwen3MoeConfig(
        vocab_size=VOCAB,
        hidden_size=128,
        intermediate_size=256,
        moe_intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
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
    # Not a keyword of the config's signature, but read by its attention (None would break it).
    config.head_dim = 32
    Qwen3MoeForCausalLM(config).save_pretrained(str(out))


def _gpt2(out: Path) -> None:
    from transformers import GPT2Config, GPT2LMHeadModel

    tok = _bpe_tokenizer(["<|endoftext|>"])
    eot = "<|endoftext|>"
    _save_tokenizer(tok, out, bos_token=eot, eos_token=eot, unk_token=eot, pad_token=eot)
    config = GPT2Config(
        vocab_size=VOCAB,
        n_positions=256,
        n_embd=64,
        n_layer=2,
        n_head=2,
        bos_token_id=0,
        eos_token_id=0,
    )
    GPT2LMHeadModel(config).save_pretrained(str(out))


def _bert(out: Path) -> None:
    from transformers import BertConfig, BertForMaskedLM

    tok = _wordpiece_tokenizer()
    _save_tokenizer(
        tok,
        out,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )
    config = BertConfig(
        vocab_size=VOCAB,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=128,
        max_position_embeddings=256,
        pad_token_id=0,
    )
    BertForMaskedLM(config).save_pretrained(str(out))


BUILDERS: dict[str, Callable[[Path], None]] = {
    "tiny-llama": _llama,
    "tiny-gpt2": _gpt2,
    "tiny-bert": _bert,
    "tiny-moe": _moe,
}


def is_built(path: Path) -> bool:
    try:
        return int(read_json(path / MARKER).get("version", 0)) == BUILDER_VERSION
    except (OSError, ValueError, AttributeError):
        return False


def build_tiny_models(
    root: Path, names: list[str] | None = None, force: bool = False
) -> dict[str, tuple[Path, bool]]:
    """Build the tiny models under ``root``; returns name → (dir, built now?)."""
    import torch

    root.mkdir(parents=True, exist_ok=True)
    done: dict[str, tuple[Path, bool]] = {}
    for name in names or list(BUILDERS):
        target = root / name
        if is_built(target) and not force:
            done[name] = (target, False)
            continue
        torch.manual_seed(0)
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=root))
        tmp.chmod(0o755)
        try:
            BUILDERS[name](tmp)
            atomic_write_json(tmp / MARKER, {"version": BUILDER_VERSION, "name": name})
            if target.exists():
                shutil.rmtree(target)
            tmp.rename(target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        done[name] = (target, True)
    return done
