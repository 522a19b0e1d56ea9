"""Model → ``fx.GraphModule``: ``symbolic_trace`` first, ``torch.export`` when that fails.

``symbolic_trace`` keeps nn modules as ``call_module`` leaves and needs no inputs; HF models
defeat it (their forward inspects arguments and builds caches), so they go through
``torch.export.export(strict=False)``, whose unlifted module is an aten-level graph that shares
the model's parameters. A model whose control flow depends on tensor values defeats both,
and gets one clear error naming both failures.
"""

from __future__ import annotations

import contextlib
import io
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch import fx

from kerneltracer.errors import UnsupportedError


@dataclass(frozen=True)
class Traced:
    module: fx.GraphModule
    method: str  # "symbolic_trace" or "torch.export"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


@contextlib.contextmanager
def _quiet_export() -> Iterator[None]:
    # A failing export prints its partial graph to stderr and logs guard warnings; the one-line
    # error below says what matters, so keep the terminal clean.
    logger = logging.getLogger("torch.fx.experimental.symbolic_shapes")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        logger.setLevel(level)


def trace(model: torch.nn.Module, example_inputs: tuple[Any, ...]) -> Traced:
    """Trace ``model``; raises :class:`UnsupportedError` when no tracer can capture it."""
    try:
        return Traced(fx.symbolic_trace(model), "symbolic_trace")
    except Exception as exc:  # any tracing failure falls through to export
        symbolic_error = exc
    try:
        with _quiet_export():
            exported = torch.export.export(model, example_inputs, strict=False)
        module = exported.module()
    except Exception as exc:  # reported with the symbolic_trace failure
        raise UnsupportedError(
            f"cannot capture {type(model).__name__} as one static graph (dynamic control flow "
            f"or an unsupported op?): symbolic_trace: {_first_line(symbolic_error)}; "
            f"torch.export: {_first_line(exc)}"
        ) from exc
    if not isinstance(module, fx.GraphModule):
        raise UnsupportedError(f"torch.export returned {type(module).__name__}, not a graph")
    return Traced(module, "torch.export")
