"""Example inputs for any transformers architecture, and the phase a step runs.

Which inputs are built is decided by the model class's forward() signature and its config:
every required argument must have a builder (else the job is ``unsupported``, naming the
argument), optional ones are built when their builder says the model wants them.
"""

from __future__ import annotations

import contextlib
from typing import Any

from kerneltracer.errors import UnsupportedError
from kerneltracer.worker.inputs.builders import BUILDERS, Builder
from kerneltracer.worker.inputs.decode import CACHE_NAMES, NOT_FOR_GENERATE, build_decode
from kerneltracer.worker.inputs.diagnose import explain
from kerneltracer.worker.inputs.spec import InputSpec
from kerneltracer.worker.inputs.workload import (
    PHASES,
    Forward,
    Generate,
    Workload,
    check_phase,
)

__all__ = [
    "PHASES",
    "InputSpec",
    "Workload",
    "build_inputs",
    "build_workload",
    "describe",
    "explain",
]

# Arguments that carry the model's data; a forward taking none of them cannot be fed.
_PRIMARY = ("input_ids", "pixel_values", "input_values", "input_features", "past_values")


def build_inputs(spec: InputSpec) -> dict[str, Any]:
    """The forward's keyword arguments (on the CPU), in registry order."""
    built: dict[str, Any] = {}
    takes_kwargs = any(p.kind == p.VAR_KEYWORD for p in spec.params.values())
    for name, builder in BUILDERS.items():
        if builder.train_only and not spec.train:
            continue
        # A forward that only takes **kwargs (remote-code wrappers) still gets token ids.
        accepted = name in spec.params or (
            takes_kwargs and name in ("input_ids", "attention_mask") and not _has_primary(spec)
        )
        if not accepted:
            continue
        if name in spec.required or builder.wanted(spec, built):
            try:
                built[name] = _build(builder, spec, built)
            except Exception as exc:  # a builder that asks the model (image token counts)
                explained = explain(exc, spec, built)
                if explained is None:
                    raise
                raise explained from exc
    missing = [n for n in spec.required if n not in built]
    if missing:
        raise UnsupportedError(
            f"{spec.class_name}.forward argument {missing[0]!r} has no input builder "
            f"(builders: {', '.join(BUILDERS)})"
        )
    if not any(k in built for k in _PRIMARY):
        raise UnsupportedError(
            f"{spec.class_name}.forward takes none of {', '.join(_PRIMARY)}: no input to build"
        )
    return built


def _build(builder: Builder, spec: InputSpec, built: dict[str, Any]) -> Any:
    if not builder.known or spec.keep_values is None:
        return builder.build(spec, built)
    if builder.prepare is not None:
        builder.prepare(spec, built)
    return spec.keep_values(lambda real: builder.build(spec, real), built)


def _has_primary(spec: InputSpec) -> bool:
    return any(k in spec.params for k in _PRIMARY)


def build_workload(spec: InputSpec, phase: str, new_tokens: int) -> Workload:
    """Inputs for ``phase`` on ``spec.device``; decode runs its prefill here, untraced."""
    check_phase(phase, spec.model, spec.train)
    inputs = {k: _to(v, spec.device) for k, v in build_inputs(spec).items()}
    workload: Workload
    if phase == "prefill":
        workload = Forward(inputs)
    elif phase == "generate":
        prompt = {k: v for k, v in inputs.items() if k not in NOT_FOR_GENERATE}
        workload = Generate(prompt, new_tokens, _pad_id(spec))
    else:
        try:
            workload = build_decode(spec, inputs)
        except Exception as exc:  # its prefill runs the model on our inputs
            explained = explain(exc, spec, inputs)
            if explained is None:
                raise
            raise explained from exc
    workload.spec = spec
    return workload


def _pad_id(spec: InputSpec) -> int | None:
    for name in ("pad_token_id", "eos_token_id"):
        value = spec.find(name)
        if isinstance(value, list) and value:
            value = value[0]
        if isinstance(value, int):
            return value
    return 0


def describe(workload: Workload) -> list[dict[str, Any]]:
    """What was built, for _TRACE_STATUS.json: name, kind, shape, dtype per input."""
    import torch

    rows: list[dict[str, Any]] = []
    for name, value in workload.inputs().items():
        if isinstance(value, bool):
            rows.append(
                {"name": name, "kind": "flag", "shape": [], "dtype": "bool", "value": value}
            )
        elif torch.is_tensor(value):
            kind = BUILDERS[name].kind if name in BUILDERS else "step"
            rows.append(
                {
                    "name": name,
                    "kind": kind,
                    "shape": list(value.shape),
                    "dtype": str(value.dtype).removeprefix("torch."),
                }
            )
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            # Per-image targets: one row, its shape the number of images.
            kind = BUILDERS[name].kind if name in BUILDERS else "step"
            rows.append(
                {
                    "name": name,
                    "kind": kind,
                    "shape": [len(value)],
                    "dtype": "list",
                    "keys": sorted(value[0]),
                }
            )
        elif isinstance(value, list) and value and all(torch.is_tensor(v) for v in value):
            # One tensor per sample (ragged series): one row, each sample's shape listed.
            kind = BUILDERS[name].kind if name in BUILDERS else "step"
            rows.append(
                {
                    "name": name,
                    "kind": kind,
                    "shape": [len(value)],
                    "dtype": str(value[0].dtype).removeprefix("torch."),
                    "shapes": [list(v.shape) for v in value],
                }
            )
        elif name in CACHE_NAMES:
            rows.append(_describe_cache(name, value))
        elif name == "encoder_outputs":
            hidden = getattr(value, "last_hidden_state", None)
            shape = list(hidden.shape) if hidden is not None else []
            rows.append({"name": name, "kind": "encoder_outputs", "shape": shape, "dtype": ""})
    if isinstance(workload, Generate):
        rows.append(
            {
                "name": "max_new_tokens",
                "kind": "generate",
                "shape": [],
                "dtype": "",
                "value": workload.new_tokens,
            }
        )
    return rows


def _describe_cache(name: str, cache: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "name": name,
        "kind": "cache",
        "shape": [],
        "dtype": "",
        "type": type(cache).__name__,
    }
    inner = getattr(cache, "self_attention_cache", cache)
    layers = getattr(inner, "layers", None) or []
    keys = getattr(layers[0], "keys", None) if layers else None
    if keys is not None and hasattr(keys, "shape"):
        row.update(
            shape=list(keys.shape), dtype=str(keys.dtype).removeprefix("torch."), layers=len(layers)
        )
    length = getattr(cache, "get_seq_length", None)
    if callable(length):
        # Some caches cannot tell; the shape still says it.
        with contextlib.suppress(Exception):
            row["tokens"] = int(length())
    return row


def _to(value: Any, device: str) -> Any:
    if isinstance(value, list):  # per-image targets (detection labels)
        return [_to(v, device) for v in value]
    if isinstance(value, dict):
        return {k: _to(v, device) for k, v in value.items()}
    return value.to(device) if hasattr(value, "to") else value
