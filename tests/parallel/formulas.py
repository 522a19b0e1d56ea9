"""The collectives a rank of each layout issues, counted by hand from the layout's algebra.

Independent of the simulation: each function is what a rank of a real deployment sends,
written from the config's sizes (B batch, S tokens, H hidden, V vocabulary, I intermediate,
k experts per token), so a test compares the simulation's records with it. A collective is
(kind, group axis, bytes of this rank's input buffer).
"""

from __future__ import annotations

from typing import Any

Coll = tuple[str, str, int]


def tp_forward(
    cfg: dict[str, Any], b: int, s: int, tp: int, itemsize: int, layers: int
) -> list[Coll]:
    """Megatron TP: the vocab-parallel embedding's all-reduce, two all-reduces of the hidden
    states per layer (after o_proj and down_proj), the LM head's gather of vocab slices."""
    h, v = cfg["hidden_size"], cfg["vocab_size"]
    act = b * s * h * itemsize
    out: list[Coll] = [("all_reduce", "tp", act)]
    out += [("all_reduce", "tp", act)] * (2 * layers)
    out.append(("all_gather", "tp", b * s * (v // tp) * itemsize))
    return out


def tp_backward(cfg: dict[str, Any], b: int, s: int, itemsize: int, layers: int) -> list[Coll]:
    """transformers' TP backward: every column-parallel linear all-reduces its input's
    gradient on its own (q, k, v, gate, up: five per layer; no fused QKV), and the LM head."""
    act = b * s * cfg["hidden_size"] * itemsize
    return [("all_reduce", "tp", act)] * (5 * layers + 1)


def tp_pp_forward(
    cfg: dict[str, Any], b: int, s: int, tp: int, pp: int, stage: int, itemsize: int, layers: int
) -> list[Coll]:
    """A pipeline stage of TP x PP: its layers' all-reduces, the activations sent on (or
    received), and transformers' naive schedule's logits broadcast from the last stage."""
    h, v = cfg["hidden_size"], cfg["vocab_size"]
    act = b * s * h * itemsize
    per_stage = layers // pp
    out: list[Coll] = []
    if stage == 0:
        out.append(("all_reduce", "tp", act))
    else:
        out.append(("recv", "pp", act))
    out += [("all_reduce", "tp", act)] * (2 * per_stage)
    if stage == pp - 1:
        out.append(("all_gather", "tp", b * s * (v // tp) * itemsize))
    else:
        out.append(("send", "pp", act))
    out.append(("broadcast", "pp", 3 * 8))  # the logits' shape, int64
    out.append(("broadcast", "pp", b * s * v * itemsize))
    return out


def ep_forward(
    cfg: dict[str, Any],
    b: int,
    s: int,
    ep: int,
    itemsize: int,
    moe_layers: int,
    experts: int,
    top_k: int,
) -> list[Coll]:
    """EP with data-parallel attention, balanced routing: per MoE layer the per-expert counts
    exchanged, the (token, expert) rows sent to their experts and the results sent back."""
    h = cfg["hidden_size"]
    rows = b * s * top_k  # every (token, expert) pair this rank routes, split evenly
    per_layer: list[Coll] = [
        ("all_to_all", "ep", experts * 8),  # int64 counts per expert
        ("all_to_all", "ep", rows * h * itemsize),
        ("all_to_all", "ep", rows * h * itemsize),
    ]
    return per_layer * moe_layers


def fsdp_layer_params(cfg: dict[str, Any]) -> int:
    """Parameters of one Llama decoder layer: attention, gated MLP, two RMSNorms."""
    h, i = cfg["hidden_size"], cfg["intermediate_size"]
    heads, kv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    d = cfg.get("head_dim") or h // heads
    return h * heads * d * 2 + h * kv * d * 2 + 3 * h * i + 2 * h


def fsdp_train_layer(cfg: dict[str, Any], dp: int, itemsize: int) -> tuple[Coll, Coll]:
    """FSDP per decoder layer in a train step: the all-gather of the layer's shard (forward,
    and again in backward) and the reduce-scatter of its full gradient."""
    n = fsdp_layer_params(cfg)
    return ("all_gather", "dp", n // dp * itemsize), ("reduce_scatter", "dp", n * itemsize)
