"""The envelope types TORCH_TRACE logs carry and how each type is stored.

An envelope is one glog line's JSON object: compile-id fields, ``rank``, ``has_payload``,
an optional top-level ``stack`` and one type key whose value is the type's metadata.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Keys every envelope may carry besides its type key.
COMMON_KEYS = frozenset(
    {"rank", "compiled_autograd_id", "frame_id", "frame_compile_id", "attempt", "has_payload"}
)
STACK_KEY = "stack"
STR_KEY = "str"
CHROMIUM_KEY = "chromium_event"


@dataclass(frozen=True)
class EnvelopeType:
    name: str
    category: str
    payload: str  # "inlined", "none" or "special"


def _types(category: str, payload: str, *names: str) -> list[EnvelopeType]:
    return [EnvelopeType(n, category, payload) for n in names]


INVENTORY: tuple[EnvelopeType, ...] = tuple(
    _types(
        "graph",
        "inlined",
        "dynamo_output_graph",
        "optimize_ddp_split_graph",
        "optimize_ddp_split_child",
        "compiled_autograd_graph",
        "aot_forward_graph",
        "aot_backward_graph",
        "aot_inference_graph",
        "aot_joint_graph",
        "inductor_pre_grad_graph",
        "inductor_post_grad_graph",
        "graph_dump",
    )
    + _types("code", "inlined", "inductor_output_code", "dynamo_cpp_guards_str")
    + _types("guards", "inlined", "dynamo_guards")
    + _types("guards", "none", "symbolic_shape_specialization", "guard_added_fast")
    + _types(
        "metrics",
        "none",
        "compilation_metrics",
        "bwd_compilation_metrics",
        "aot_autograd_backward_compilation_metrics",
    )
    + _types("stack", "none", "dynamo_start")
    + _types(
        "symbolic",
        "none",
        "propagate_real_tensors_provenance",
        "guard_added",
        "create_unbacked_symbol",
        "expression_created",
    )
    + _types("events", "special", CHROMIUM_KEY)
    + _types("artifact", "inlined", "artifact", "dump_file")
    + _types("artifact", "none", "link")
    + _types("tensor", "none", "describe_tensor", "describe_storage", "describe_source")
    + _types("export", "none", "missing_fake_kernel", "mismatched_fake_kernel")
    + _types("export", "inlined", "exported_program")
    + _types("internal", "none", STR_KEY)
    + _types("stack", "none", STACK_KEY)
)

# Types newer PyTorch versions log that tlparse's inventory predates; known, not "unknown".
_EXTRA_TYPES: tuple[EnvelopeType, ...] = tuple(
    _types("metrics", "none", "compilation_metrics_runtime")
    + _types("symbolic", "none", "create_symbol")
    + _types("artifact", "inlined", "memoizer_artifacts")
)

KNOWN_TYPES: dict[str, EnvelopeType] = {t.name: t for t in INVENTORY + _EXTRA_TYPES}

# Graph-like payloads written verbatim as ``<type>.txt`` (tlparse's sentinel parsers).
SENTINEL_GRAPH_TYPES = (
    "optimize_ddp_split_graph",
    "compiled_autograd_graph",
    "aot_forward_graph",
    "aot_backward_graph",
    "aot_inference_graph",
    "aot_joint_graph",
    "inductor_post_grad_graph",
    "inductor_pre_grad_graph",
    "dynamo_cpp_guards_str",
)

_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]")


def safe_name(name: str, limit: int = 160) -> str:
    """A file-name-safe spelling of untrusted text (type names, artifact names)."""
    cleaned = _UNSAFE.sub("_", name)[:limit].lstrip(".")
    return cleaned or "_"
