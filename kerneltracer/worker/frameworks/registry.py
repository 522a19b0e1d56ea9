"""Framework name → loader. The worker reaches a framework only through this table.

Importing it imports no framework: loaders import torch, transformers or vLLM inside
``load``, so the orchestrator can read what a framework's interpreter needs from here.
"""

from __future__ import annotations

from collections.abc import Mapping

from kerneltracer.errors import UnsupportedError, choices
from kerneltracer.worker.frameworks.base import FrameworkLoader
from kerneltracer.worker.frameworks.huggingface.loader import HuggingFaceLoader
from kerneltracer.worker.frameworks.vllm.loader import VLLMLoader

LOADERS: Mapping[str, type[FrameworkLoader]] = {
    cls.name: cls for cls in (HuggingFaceLoader, VLLMLoader)
}


def loader_class(framework: str) -> type[FrameworkLoader]:
    try:
        return LOADERS[framework]
    except KeyError:
        raise UnsupportedError(
            f"framework {framework!r} has no loader in this worker (valid: {choices(LOADERS)})"
        ) from None


def get_loader(framework: str) -> FrameworkLoader:
    return loader_class(framework)()


def version_modules() -> tuple[str, ...]:
    """Every framework module whose version a status records (None when not imported)."""
    seen: dict[str, None] = {}
    for cls in LOADERS.values():
        seen.update(dict.fromkeys(cls.version_modules))
    return tuple(seen)
