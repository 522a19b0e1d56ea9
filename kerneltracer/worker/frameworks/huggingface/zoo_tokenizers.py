"""Tokenizer files some zoo entries ship, written offline without the tokenizer's package.

The XLM tokenizer needs sacremoses, an optional dependency: with it the model's prompts are
tokenized text, without it the loader falls back to seeded random ids and says why.
"""

from __future__ import annotations

import json
import string
from collections.abc import Callable
from pathlib import Path


def xlm(out: Path) -> None:
    """A BPE vocabulary of single letters (XLMTokenizer's vocab.json + merges.txt)."""
    special = ["<s>", "</s>", "<pad>", "<unk>", "<special0>", "<special1>"]
    letters = [*string.ascii_lowercase, *string.digits, ".", ","]
    vocab = {tok: i for i, tok in enumerate(special)}
    for ch in letters:
        vocab.setdefault(ch, len(vocab))
        vocab.setdefault(f"{ch}</w>", len(vocab))
    (out / "vocab.json").write_text(json.dumps(vocab))
    (out / "merges.txt").write_text("#version: 0.2\n")
    config = {
        "tokenizer_class": "XLMTokenizer",
        "model_max_length": 128,
        "do_lowercase_and_remove_accent": True,
    }
    (out / "tokenizer_config.json").write_text(json.dumps(config))


WRITERS: dict[str, Callable[[Path], None]] = {"xlm": xlm}
