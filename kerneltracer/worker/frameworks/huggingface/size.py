"""Refuse, before building, a model whose config alone says it cannot fit.

A config with ``num_hidden_layers: 100000`` builds for minutes before the memory ceiling
stops it; one with ``vocab_size: 10**9`` asks for a tensor larger than the machine. From the
config's sizes, a lower bound of what the build holds is known at once: the weights of a
decoder (embeddings, and per layer the attention and MLP projections) with real weights;
with fake weights no storage, but the modules and fake tensors of every layer
(:data:`FAKE_LAYER_BYTES`). When that lower bound is above the job's memory ceiling or the
machine's memory and swap, the job is refused naming the config field that weighs most.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psutil

from kerneltracer.errors import UnsupportedError

GiB = 1024**3
# What one decoder layer of fake tensors costs in the worker, at least: measured 91 KiB for
# a Llama layer (5 modules of projections, 2 norms), rounded down.
FAKE_LAYER_BYTES = 64 * 1024


@dataclass(frozen=True)
class SizeEstimate:
    total_bytes: int
    by_field: dict[str, int]  # the config field a part scales with -> its bytes
    values: dict[str, int]  # that field's value in the config
    what: str  # "float32 weights", "fake tensors"

    def heaviest(self) -> str:
        return max(self.by_field, key=lambda f: self.by_field[f])


def _int(config: Any, *names: str) -> int | None:
    for name in names:
        value = getattr(config, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def estimate(config: Any, dtype_bytes: int, fake: bool, dtype_name: str) -> SizeEstimate | None:
    """A lower bound of the build's memory from the config's sizes; None when it names none."""
    text = getattr(config, "get_text_config", None)
    cfg = text() if callable(text) else config
    layers = _int(cfg, "num_hidden_layers", "n_layer", "num_layers")
    if fake:
        if layers is None:
            return None
        total = layers * FAKE_LAYER_BYTES
        return SizeEstimate(
            total, {"num_hidden_layers": total}, {"num_hidden_layers": layers}, "fake tensors"
        )
    hidden = _int(cfg, "hidden_size", "n_embd", "d_model")
    if hidden is None:
        return None
    parts: dict[str, int] = {}
    vocab = _int(cfg, "vocab_size")
    values = {"vocab_size": vocab or 0, "num_hidden_layers": layers or 0}
    if vocab is not None:
        tied = bool(getattr(cfg, "tie_word_embeddings", True))
        parts["vocab_size"] = vocab * hidden * (1 if tied else 2)
    if layers is not None:
        inter = _int(cfg, "intermediate_size", "n_inner", "d_ff") or 4 * hidden
        # Attention at least q and o (hidden x hidden each), the MLP at least up and down.
        parts["num_hidden_layers"] = layers * (2 * hidden * hidden + 2 * hidden * inter)
    if not parts:
        return None
    by_field = {f: n * dtype_bytes for f, n in parts.items()}
    return SizeEstimate(sum(by_field.values()), by_field, values, f"{dtype_name} weights")


def check_fits(config: Any, dtype: Any, fake: bool, max_rss_gb: float | None) -> None:
    """Raise :class:`UnsupportedError` when the estimate exceeds the ceiling or the machine."""
    name = str(dtype).removeprefix("torch.")
    size = estimate(config, int(getattr(dtype, "itemsize", 4)), fake, name)
    if size is None:
        return
    machine = psutil.virtual_memory().total + psutil.swap_memory().total
    limits = [(machine, f"this machine's memory and swap ({machine / GiB:.1f} GiB)", "")]
    if max_rss_gb is not None:
        said = f"the memory ceiling (max_rss_gb {max_rss_gb:g})"
        limits.append((int(max_rss_gb * GiB), said, ", or raise max_rss_gb"))
    limit, said, or_raise = min(limits)
    if size.total_bytes <= limit:
        return
    field = size.heaviest()
    raise UnsupportedError(
        f"the config's {field}: {size.values[field]} makes the model at least "
        f"{size.total_bytes / GiB:.1f} GiB of {size.what}, more than {said}; "
        f"refused before building it (lower {field}{or_raise})"
    )
