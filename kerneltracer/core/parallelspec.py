"""A job's parallel request, as JOB.json carries it, and the checks made from the config alone.

Torch-free: the orchestrator names the job's column from it, and the worker checks the
degrees against the model's ``config.json`` before anything is built (heads and KV heads
divisible by tp, experts by ep, layers by pp), with one line that names the valid degrees.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kerneltracer.core.parallel import Layout

# Keys of the model's config (text_config for a multimodal one) that say what divides.
_HEADS = ("num_attention_heads", "n_head", "num_heads")
_KV_HEADS = ("num_key_value_heads",)
_EXPERTS = ("num_local_experts", "num_experts", "n_routed_experts")
_LAYERS = ("num_hidden_layers", "n_layer", "num_layers")


@dataclass(frozen=True)
class ParallelSpec:
    """Degrees plus what shapes them: FSDP over dp (train), user plans."""

    layout: Layout
    fsdp: bool = False
    # A user plan overrides the model's own, rule by rule (transformers' DistributedConfig).
    tp_plan: dict[str, str] | None = None
    ep_plan: dict[str, str] | None = None
    fsdp_plan: dict[str, str] | None = None
    # Decoder layers the simulation builds (None: the config's); every layer of a stage runs
    # the same ops, so a few layers show a deep model's per-layer ops and collectives.
    layers: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ParallelSpec:
        layout = Layout(
            tp=int(data.get("tp", 1)),
            ep=int(data.get("ep", 1)),
            pp=int(data.get("pp", 1)),
            dp=int(data.get("dp", 1)),
        )
        return cls(
            layout=layout,
            fsdp=bool(data.get("fsdp", False)),
            tp_plan=data.get("tp_plan"),
            ep_plan=data.get("ep_plan"),
            fsdp_plan=data.get("fsdp_plan"),
            layers=data.get("layers"),
        )

    def label(self) -> str:
        """The job column's suffix: ``tp8``, ``tp8.pp2``, ``fsdp8`` (dp sharded by FSDP); user
        plans are not in it (two plans of one model and layout need distinct ``name:``s)."""
        if not self.layout.is_parallel:
            return "single"
        text = self.layout.label()
        if self.fsdp:
            text = ".".join("fs" + p if p.startswith("dp") else p for p in text.split("."))
        return text


def layout_problem(spec: ParallelSpec, mode: str) -> str | None:
    """What the simulation cannot do with this layout whatever the model; None if it can."""
    lay = spec.layout
    if lay.ep > 1 and lay.tp > 1:
        return (
            f"parallel: ep {lay.ep} with tp {lay.tp} is not simulated yet (ep runs with tp 1: "
            "data-parallel attention, experts spread over the ep ranks)"
        )
    if spec.fsdp and lay.dp == 1:
        return "parallel.fsdp needs dp > 1 (FSDP shards over the data-parallel ranks)"
    if spec.fsdp and mode != "train":
        return "parallel.fsdp applies to mode train (eval keeps whole weights per rank)"
    if lay.dp > 1 and not spec.fsdp and mode == "train":
        return (
            "parallel: dp in mode train needs fsdp: true (transformers plans FSDP; plain data "
            "parallel's gradient all-reduce is not simulated)"
        )
    if lay.dp > 1 and lay.pp > 1:
        return "parallel: dp with pp is not supported by transformers' plans (FSDP + PP)"
    if lay.ep > 1 and lay.pp > 1:
        return "parallel: ep with pp is not supported by transformers' plans (EP + PP)"
    return None


def _first(cfg: Mapping[str, Any], keys: tuple[str, ...]) -> int | None:
    for key in keys:
        value = cfg.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _common(*ns: int) -> list[int]:
    return [d for d in _divisors(min(ns)) if all(n % d == 0 for n in ns)]


def _names(values: list[int]) -> str:
    return ", ".join(str(v) for v in values)


def degrees_problem(config: Mapping[str, Any], spec: ParallelSpec) -> str | None:
    """Degrees that do not divide the model; one line naming the valid ones, or None.

    ``config`` is the model's config.json (a multimodal model's text_config is what is
    sharded). An encoder-decoder's ``num_layers`` is what pp splits.
    """
    cfg: Mapping[str, Any] = config.get("text_config") or config
    lay = spec.layout
    if lay.tp > 1:
        heads = _first(cfg, _HEADS)
        kv = _first(cfg, _KV_HEADS) or heads
        if heads is None or kv is None:
            return "parallel.tp: the config names no attention head count to shard"
        if heads % lay.tp or kv % lay.tp:
            return (
                f"parallel.tp {lay.tp} does not divide the model's {heads} attention heads "
                f"and {kv} KV heads (valid tp: {_names(_common(heads, kv))})"
            )
    if lay.ep > 1:
        experts = _first(cfg, _EXPERTS)
        if experts is None:
            return "parallel.ep: the model has no experts (its config names no expert count)"
        if experts % lay.ep:
            return (
                f"parallel.ep {lay.ep} does not divide the model's {experts} experts "
                f"(valid ep: {_names(_divisors(experts))})"
            )
    if lay.pp > 1:
        layers = _first(cfg, _LAYERS)
        if layers is None:
            return "parallel.pp: the config names no layer count to split"
        for what, count in (("the model's", layers), ("parallel.layers", spec.layers)):
            if count is not None and count % lay.pp:
                return (
                    f"parallel.pp {lay.pp} does not divide {what} {count} layers "
                    f"(valid pp: {_names(_divisors(count))})"
                )
    return None
