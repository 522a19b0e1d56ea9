"""Framework name → loader. The worker reaches a framework only through this table.

Importing it imports no framework: loaders import torch, transformers or vLLM inside
``load``, so the orchestrator can read what a framework's interpreter needs from here.
"""

from __future__ import annotations

from kerneltracer.core.registry import Registry
from kerneltracer.errors import UnsupportedError, choices
from kerneltracer.worker.frameworks.base import FrameworkLoader

LOADERS: Registry[type[FrameworkLoader]] = Registry(
    "framework",
    [".huggingface.loader:HuggingFaceLoader", ".vllm.loader:VLLMLoader"],
    package=__package__,
)


def loader_class(framework: str) -> type[FrameworkLoader]:
    # Not the registry's usage error: a job naming a framework this worker lacks is a
    # worker that cannot run it (another install), not a typo the user can fix here.
    if framework not in LOADERS:
        raise UnsupportedError(
            f"framework {framework!r} has no loader in this worker (valid: {choices(LOADERS)})"
        )
    return LOADERS[framework]


def get_loader(framework: str) -> FrameworkLoader:
    return loader_class(framework)()


def version_modules() -> tuple[str, ...]:
    """Every framework module whose version a status records (None when not imported)."""
    seen: dict[str, None] = {}
    for cls in LOADERS.values():
        seen.update(dict.fromkeys(cls.version_modules))
    return tuple(seen)
