"""What a preloaded HuggingFace worker imports before it forks (kerneltracer.worker.forkserver).

``import torch, transformers`` alone leaves a forked child seconds of work: transformers
imports model code lazily, and each tracer's torch machinery (dispatch modes, fake tensors,
the profiler, FX and Dynamo) loads on first use. Importing them here moves that cost to the
server, once per run; what only one tracer needs is that tracer's ``preload_modules``. Only
imports, and tables transformers builds from its own code on first use: no op runs, so no
thread pool starts before the fork.
"""

from __future__ import annotations

import contextlib
import importlib

# The loader's machinery and what every tracer uses, most expensive first.
_MODULES = (
    "torch",
    "transformers",
    "transformers.modeling_utils",
    "transformers.generation",
    "transformers.models.auto.modeling_auto",
    "transformers.models.auto.tokenization_auto",
    "safetensors.torch",
    "tokenizers",
    "torch.utils._python_dispatch",
    "torch._subclasses.fake_tensor",
    "torch.fx",
    "torch._dynamo",
    "kerneltracer.worker.frameworks.huggingface.loader",
    "kerneltracer.worker.inputs",
)


def model_modules(model_type: str) -> list[str]:
    """The modules transformers would import lazily for a model of this type."""
    from transformers.models.auto.configuration_auto import model_type_to_module_name

    name = model_type_to_module_name(model_type)
    base = f"transformers.models.{name}"
    return [f"{base}.configuration_{name}", f"{base}.modeling_{name}"]


def preload(model_types: list[str]) -> list[str]:
    """Import the common modules and those of ``model_types``; the names that failed."""
    failed = []
    for name in _MODULES:
        if not _try_import(name):
            failed.append(name)
    for model_type in model_types:
        try:
            names = model_modules(model_type)
        except Exception:  # an unknown type (remote code): its job imports what it needs
            failed.append(model_type)
            continue
        failed += [n for n in names if not _try_import(n)]
    _build_tables()
    return failed


def _build_tables() -> None:
    """What ``from_pretrained`` builds once per process and every forked job would build
    again: transformers 5's table of checkpoint conversions (~1,000 regular expressions
    compiled, 0.1-0.2 s a job). A module-level cache, the same for every model; callers
    get deep copies of it, so a job cannot change what the next one sees."""
    try:
        from transformers.conversion_mapping import get_checkpoint_conversion_mapping
    except ImportError:  # older transformers: no such table
        return
    with contextlib.suppress(Exception):  # a job that needs it builds it itself
        get_checkpoint_conversion_mapping("")


def _try_import(name: str) -> bool:
    try:
        importlib.import_module(name)
    except Exception:  # a missing optional module costs the child its import, no more
        return False
    return True
