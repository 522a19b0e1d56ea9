"""A model's tokenizer, tried one way for every framework: optional, and why it is missing.

No step depends on a tokenizer's text (inputs fall back to seeded random ids, a vLLM engine
to token-id prompts), so a tokenizer that does not load is never a failure; what differs
is only what each framework says about it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kerneltracer.worker.dependencies import MissingDependency, missing_dependency


@dataclass(frozen=True)
class TokenizerLoad:
    """What ``AutoTokenizer`` made of a model directory."""

    tokenizer: Any  # None when it did not load
    problem: str | None = None  # why not, one line of at most 200 characters
    missing: MissingDependency | None = None  # the files are there, a package is not


def load_tokenizer(path: Path | str, trust_remote_code: bool) -> TokenizerLoad:
    import transformers

    try:
        tok = transformers.AutoTokenizer.from_pretrained(
            str(path), trust_remote_code=trust_remote_code
        )
    except Exception as exc:  # any reason: a tokenizer is optional
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        problem = f"{type(exc).__name__}: {first}"[:200]
        return TokenizerLoad(None, problem, missing_dependency(exc))
    return TokenizerLoad(tok)
