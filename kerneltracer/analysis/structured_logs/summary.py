"""Per-compile-id summaries (``by_compile_id/<id>/summary.json``), accumulated while parsing.

Besides tlparse's quick metadata, a summary lists the compile id's *outputs*: every
envelope a render module turns into a file or a link, with the little metadata needed to
name it. That lets stage 2 number artifacts in log order (tlparse's numbering) without
re-reading payloads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from kerneltracer.analysis.structured_logs.compile_id import CompileId
from kerneltracer.analysis.structured_logs.envelopes import SENTINEL_GRAPH_TYPES

# Envelope types that yield an artifact, and the metadata keys their file name needs.
_OUTPUT_TYPES: dict[str, tuple[str, ...]] = {
    **{t: () for t in SENTINEL_GRAPH_TYPES},
    "dynamo_output_graph": (),
    "graph_dump": ("name",),
    "optimize_ddp_split_child": ("name",),
    "dynamo_guards": (),
    "inductor_output_code": ("filename",),
    "compilation_metrics": (),
    "bwd_compilation_metrics": (),
    "aot_autograd_backward_compilation_metrics": (),
    "artifact": ("name", "encoding"),
    "dump_file": ("name",),
    "link": ("name", "url"),
    "exported_program": (),
    "guard_added": ("prefix", "expr"),
    "propagate_real_tensors_provenance": ("expr", "result"),
}
_METRIC_KEYS = (
    "entire_frame_compile_time_s",
    "backend_compile_time_s",
    "inductor_compile_time_s",
    "code_gen_time_s",
    "dynamo_time_before_restart_s",
    "graph_op_count",
    "graph_node_count",
    "graph_input_count",
    "guard_count",
    "shape_env_guard_count",
)


@dataclass
class CompileSummary:
    cid: CompileId
    event_count: int = 0
    event_types: dict[str, None] = field(default_factory=dict)
    has_failure: bool = False
    failure_reason: str | None = None
    fail_type: str | None = None
    restart_reasons: list[str] = field(default_factory=list)
    stack_summary: dict[str, Any] | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    outputs: list[dict[str, Any]] = field(default_factory=list)

    def add(self, seq: int, etype: str, meta: Any, payload: bytes | None) -> None:
        self.event_count += 1
        self.event_types[etype] = None
        keys = _OUTPUT_TYPES.get(etype)
        if keys is not None:
            out: dict[str, Any] = {"seq": seq, "type": etype}
            if isinstance(meta, dict):
                out["meta"] = {k: meta.get(k) for k in keys if k in meta}
            else:
                out["meta"] = {}
            if etype == "dynamo_guards":
                out["payload_ok"] = _is_json_list(payload)
            self.outputs.append(out)
        if etype == "compilation_metrics" and isinstance(meta, dict):
            self._add_metrics(meta)

    def _add_metrics(self, meta: dict[str, Any]) -> None:
        for k in _METRIC_KEYS:
            if meta.get(k) is not None:
                self.metrics[k] = meta[k]
        if meta.get("fail_type") is not None:
            self.has_failure = True
            self.fail_type = str(meta["fail_type"])
            self.failure_reason = (
                None if meta.get("fail_reason") is None else str(meta["fail_reason"])
            )
        reasons = meta.get("restart_reasons")
        if isinstance(reasons, list):
            self.restart_reasons.extend(str(r) for r in reasons)
        if meta.get("co_name") is not None:
            self.stack_summary = {
                "co_name": meta.get("co_name"),
                "co_filename": meta.get("co_filename"),
                "co_firstlineno": meta.get("co_firstlineno"),
            }

    def as_json(self) -> dict[str, Any]:
        return {
            "compile_id": self.cid.key(),
            "display_id": self.cid.display(),
            "output_dir": self.cid.dirname(),
            "id_fields": list(self.cid.as_tuple()),
            "event_count": self.event_count,
            "event_types": list(self.event_types),
            "has_failure": self.has_failure,
            "fail_type": self.fail_type,
            "failure_reason": self.failure_reason,
            "restart_reasons": self.restart_reasons,
            "stack_summary": self.stack_summary,
            "metrics": self.metrics,
            "outputs": self.outputs,
        }


def _is_json_list(payload: bytes | None) -> bool:
    if not payload:
        return False
    try:
        return isinstance(orjson.loads(payload), list)
    except orjson.JSONDecodeError:
        return False
