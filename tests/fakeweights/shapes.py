"""What a full-size model's aten trace must show, derived from its resolved config alone.

A config resolved by ``transformers.AutoConfig`` (``config.to_dict()``: defaults filled in,
nested ``text_config`` / ``vision_config`` included) names every weight's shape. Each role
below is a weight operand as the matmul-like aten ops see it: ``(in, out)`` for ``mm`` and
``addmm`` (a linear layer's transposed weight), ``(experts, in, out)`` for ``_grouped_mm``
(transformers 5 runs MoE experts as one grouped matmul). The checks are deliberately
per-role, so a mismatch names what is wrong (``k_proj (8192, 1024) never multiplied``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

Shape = tuple[int, ...]
ATTENTION_OPS = (
    "scaled_dot_product",
    "_flash_attention",
    "_efficient_attention",
    "cudnn_attention",
)


@dataclass(frozen=True)
class Expected:
    """Weight operands by role, and the attention geometry (query heads, key heads, head dim)."""

    matmul: dict[str, Shape]
    grouped: dict[str, Shape] = field(default_factory=dict)
    q_heads: int = 0
    kv_heads: frozenset[int] = frozenset()  # GQA: transformers may repeat K/V up to q_heads
    qk_head_dim: int = 0


def expected(config: Mapping[str, Any]) -> Expected:
    """The expectations for a resolved config; LLaVA-style models add their vision tower."""
    kind = config.get("model_type")
    if kind == "t5":
        return _t5(config)
    if "vision_config" in config and "text_config" in config:
        text = _decoder(config["text_config"])
        vision = _clip_vision(config["vision_config"], config["text_config"]["hidden_size"])
        return Expected(
            {**text.matmul, **vision}, text.grouped, text.q_heads, text.kv_heads, text.qk_head_dim
        )
    return _decoder(config)


def _decoder(c: Mapping[str, Any]) -> Expected:
    hidden, heads = c["hidden_size"], c["num_attention_heads"]
    kv = c.get("num_key_value_heads") or heads
    head_dim = c.get("head_dim") or hidden // heads
    matmul: dict[str, Shape] = {"lm_head": (hidden, c["vocab_size"])}
    if c.get("q_lora_rank"):
        matmul.update(_mla(c))
        qk_dim = c["qk_nope_head_dim"] + c["qk_rope_head_dim"]
    else:
        matmul.update(_attention(c["model_type"], hidden, heads, kv, head_dim))
        qk_dim = head_dim
    experts = c.get("num_local_experts") or c.get("num_experts") or c.get("n_routed_experts")
    grouped: dict[str, Shape] = {}
    if experts:
        moe = c.get("moe_intermediate_size") or c["intermediate_size"]
        grouped = {
            "experts.gate_up": (experts, hidden, 2 * moe),
            "experts.down": (experts, moe, hidden),
        }
        matmul["router"] = (hidden, experts)
        shared = c.get("n_shared_experts") or 0
        if shared:
            matmul.update(_mlp("shared_experts.", hidden, shared * moe, fused=False))
        if c.get("first_k_dense_replace"):
            matmul.update(_mlp("dense_", hidden, c["intermediate_size"], fused=False))
    else:
        matmul.update(_mlp("", hidden, c["intermediate_size"], fused=c["model_type"] == "phi3"))
    return Expected(matmul, grouped, heads, frozenset({kv, heads}), qk_dim)


def _attention(kind: str, hidden: int, heads: int, kv: int, head_dim: int) -> dict[str, Shape]:
    out: dict[str, Shape] = {"o_proj": (heads * head_dim, hidden)}
    if kind == "phi3":  # one fused projection for Q, K and V
        out["qkv_proj"] = (hidden, (heads + 2 * kv) * head_dim)
    else:
        out["q_proj"] = (hidden, heads * head_dim)
        out["k_proj"] = out["v_proj"] = (hidden, kv * head_dim)
    return out


def _mla(c: Mapping[str, Any]) -> dict[str, Shape]:
    """DeepSeek's multi-head latent attention: low-rank Q and a compressed, shared KV."""
    hidden, heads = c["hidden_size"], c["num_attention_heads"]
    nope, rope, v = c["qk_nope_head_dim"], c["qk_rope_head_dim"], c["v_head_dim"]
    return {
        "q_a_proj": (hidden, c["q_lora_rank"]),
        "q_b_proj": (c["q_lora_rank"], heads * (nope + rope)),
        "kv_a_proj_with_mqa": (hidden, c["kv_lora_rank"] + rope),
        "kv_b_proj": (c["kv_lora_rank"], heads * (nope + v)),
        "o_proj": (heads * v, hidden),
    }


def _mlp(prefix: str, hidden: int, inner: int, fused: bool) -> dict[str, Shape]:
    if fused:
        return {f"{prefix}gate_up_proj": (hidden, 2 * inner), f"{prefix}down_proj": (inner, hidden)}
    return {
        f"{prefix}gate_proj": (hidden, inner),
        f"{prefix}up_proj": (hidden, inner),
        f"{prefix}down_proj": (inner, hidden),
    }


def _t5(c: Mapping[str, Any]) -> Expected:
    hidden, heads, head_dim, inner = c["d_model"], c["num_heads"], c["d_kv"], c["d_ff"]
    matmul: dict[str, Shape] = {
        "q": (hidden, heads * head_dim),
        "k": (hidden, heads * head_dim),
        "v": (hidden, heads * head_dim),
        "o": (heads * head_dim, hidden),
        "wo": (inner, hidden),
        "lm_head": (hidden, c["vocab_size"]),
    }
    if str(c.get("feed_forward_proj", "")).startswith("gated"):
        matmul.update({"wi_0": (hidden, inner), "wi_1": (hidden, inner)})
    else:
        matmul["wi"] = (hidden, inner)
    return Expected(matmul, {}, heads, frozenset({heads}), head_dim)


def _clip_vision(v: Mapping[str, Any], text_hidden: int) -> dict[str, Shape]:
    hidden, inner = v["hidden_size"], v["intermediate_size"]
    return {
        "vision.qkvo": (hidden, hidden),
        "vision.fc1": (hidden, inner),
        "vision.fc2": (inner, hidden),
        "projector.linear_1": (hidden, text_hidden),
        "projector.linear_2": (text_hidden, text_hidden),
    }


def weight_operand(op: str, shapes: list[Shape]) -> Shape | None:
    """The weight operand of a matmul-like call, from its input shapes (``None``: not one)."""
    name = op.removeprefix("aten.")
    if name.startswith("mm.") and len(shapes) >= 2:
        return shapes[1]
    if name.startswith("addmm.") and len(shapes) >= 3:
        return shapes[2]
    if name.startswith("_grouped_mm.") and len(shapes) >= 2:
        return shapes[1]
    return None


def missing(exp: Expected, calls: Iterable[tuple[str, list[Shape]]]) -> list[str]:
    """Every expected role no call matched, and attention whose geometry is not the config's.

    ``calls`` are (op, input shapes) pairs, one per recorded signature. An empty list means
    the trace multiplied every weight the config names and attended with its head layout.
    """
    seen_2d: set[Shape] = set()
    seen_3d: set[Shape] = set()
    attention_ok = exp.q_heads == 0
    for op, shapes in calls:
        weight = weight_operand(op, shapes)
        if weight is not None:
            (seen_3d if len(weight) == 3 else seen_2d).add(weight)
        if not attention_ok:
            attention_ok = _attention_matches(exp, op, shapes)
    gaps = [
        f"{role} {shape} never multiplied"
        for role, shape in exp.matmul.items()
        if shape not in seen_2d
    ]
    gaps += [
        f"{role} {shape} never multiplied"
        for role, shape in exp.grouped.items()
        if shape not in seen_3d
    ]
    if not attention_ok:
        gaps.append(
            f"no attention with {exp.q_heads} query heads, key heads in "
            f"{sorted(exp.kv_heads)}, head dim {exp.qk_head_dim}"
        )
    return gaps


def _attention_matches(exp: Expected, op: str, shapes: list[Shape]) -> bool:
    if len(shapes) < 2 or len(shapes[0]) != 4 or len(shapes[1]) != 4:
        # The math fallback (CPU, or unequal Q/V head dims as in MLA): per-head bmm of
        # (batch·heads, seq, head_dim) queries.
        return (
            op.startswith("aten.bmm")
            and len(shapes) == 2
            and len(shapes[0]) == 3
            and shapes[0][0] % exp.q_heads == 0
            and shapes[0][2] == exp.qk_head_dim
            and shapes[1][1] == exp.qk_head_dim
        )
    if not any(name in op for name in ATTENTION_OPS):
        return False
    query, key = shapes[0], shapes[1]
    return query[1] == exp.q_heads and key[1] in exp.kv_heads and query[3] == exp.qk_head_dim
