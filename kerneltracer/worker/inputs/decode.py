"""One decode step: the new token, the cache its prompt left, and the names this
transformers gives them.

transformers renamed the decoding state over its 5.x releases: forwards took
``past_key_values`` (``cache_params`` for state-space models, ``state`` for RWKV) and
returned it under the same name; from 5.24 they take and return ``cache`` and accept the
old names only through a deprecation shim that forwards both when both are given. The
vLLM venv pins an older transformers than the main one, so the worker reads which names
a model takes from its signatures (a capability) instead of comparing version strings.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

from kerneltracer.errors import UnsupportedError
from kerneltracer.worker.inputs.spec import InputSpec
from kerneltracer.worker.inputs.workload import Decode

# Every name a decoding state has gone by, newest first: attention KV caches, state-space
# caches, RWKV's recurrent state.
CACHE_NAMES = ("cache", "past_key_values", "cache_params", "state")
# What generate() builds itself, or must not be given.
NOT_FOR_GENERATE = ("labels", "start_positions", "end_positions", "decoder_input_ids")


@dataclass(frozen=True)
class CacheApi:
    """The names under which one model takes its decoding state."""

    forward_arg: str  # the forward's own parameter
    prepare_arg: str | None  # prepare_inputs_for_generation's, when it names one
    prepare_takes_position: bool  # whether it still wants cache_position (before 5.24)

    @classmethod
    def of(cls, model: Any, forward_params: dict[str, inspect.Parameter]) -> CacheApi:
        forward_arg = _first_named(forward_params) or "past_key_values"
        prepare = getattr(model, "prepare_inputs_for_generation", None)
        prepare_params = _params(prepare) if prepare is not None else {}
        return cls(
            forward_arg=forward_arg,
            prepare_arg=_first_named(prepare_params),
            prepare_takes_position="cache_position" in prepare_params,
        )


def _params(fn: Any) -> dict[str, inspect.Parameter]:
    try:
        # Follows __wrapped__, so a deprecation decorator shows the function's own names.
        return dict(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return {}


def _first_named(params: dict[str, inspect.Parameter]) -> str | None:
    return next((n for n in CACHE_NAMES if n in params), None)


def _cache_of(out: Any) -> Any:
    """The decoding state a forward returned, whatever this transformers calls it."""
    for name in CACHE_NAMES:
        value = getattr(out, name, None)
        if value is not None:
            return value
    return None


def build_decode(spec: InputSpec, inputs: dict[str, Any]) -> Decode:
    """Run the prompt (all tokens but the last, untraced) and return the step that
    decodes the last one against the cache it left."""
    import torch

    token_key = "decoder_input_ids" if spec.encoder_decoder else "input_ids"
    ids = inputs.get(token_key)
    if ids is None:
        # generate() of a CTC head (Parakeet) is a greedy pass over one forward, not steps.
        raise UnsupportedError(
            f"phase decode steps token ids against a cache: {spec.class_name}.forward takes "
            f"no {token_key} (its generate() is not autoregressive); trace phase prefill"
        )
    if ids.dim() != 2 or ids.shape[1] < 2:
        raise UnsupportedError(f"phase decode needs {token_key} of at least 2 tokens (seq_len)")
    length = int(ids.shape[1])
    prompt = {k: v for k, v in inputs.items() if k not in NOT_FOR_GENERATE}
    for key in _per_token(prompt, ids):
        # An encoder-decoder's prompt is the decoder's: the encoder keeps its whole input.
        if not spec.encoder_decoder or key.startswith("decoder_"):
            prompt[key] = prompt[key][:, : length - 1]
    if spec.encoder_decoder:
        prompt["decoder_input_ids"] = ids[:, : length - 1]
    with torch.no_grad():
        out = spec.model(**prompt, use_cache=True)
    cache = _cache_of(out)
    if cache is None:
        raise UnsupportedError(f"{spec.class_name} returned no cache from a forward with use_cache")
    api = CacheApi.of(spec.model, spec.params)
    # A prepare that names no cache forwards its **kwargs to the forward as they are.
    extra: dict[str, Any] = {api.prepare_arg or api.forward_arg: cache, "use_cache": True}
    if "attention_mask" in inputs:
        extra["attention_mask"] = inputs["attention_mask"]
    if spec.encoder_decoder:
        from transformers.modeling_outputs import BaseModelOutput

        extra["encoder_outputs"] = BaseModelOutput(last_hidden_state=out.encoder_last_hidden_state)
    else:
        # Token types and modality ids at full length: the step slices them to the new token.
        extra.update(
            {
                k: inputs[k]
                for k in _per_token(inputs, ids)
                if k not in (token_key, "attention_mask")
            }
        )
        positions = _positions(spec, ids, inputs)
        if positions is not None:
            extra["position_ids"] = positions
    if api.prepare_takes_position:
        extra["cache_position"] = torch.tensor([length - 1], device=ids.device)
    # Only the new token: the cache holds the rest (generate() slices the same way).
    step = spec.model.prepare_inputs_for_generation(ids[:, length - 1 :], **extra)
    step = {k: v for k, v in step.items() if v is not None and k not in CACHE_NAMES}
    # Exactly one name for the cache, the forward's: under two names a deprecation shim
    # picks one, and the workload's per-step copy would guard only the other.
    step[api.forward_arg] = cache
    return Decode(step, api.forward_arg)


def _positions(spec: InputSpec, ids: Any, inputs: dict[str, Any]) -> Any:
    """Position ids of the whole sequence as generate() makes them before its first step
    (multimodal RoPE computes 3-D ones from the image grid); None where the model takes
    none or this transformers has no such hook."""
    prepare = getattr(spec.model, "_prepare_position_ids_for_generation", None)
    if prepare is None or "position_ids" not in spec.params:
        return None
    return prepare(ids, dict(inputs))


def _per_token(inputs: dict[str, Any], ids: Any) -> list[str]:
    """The inputs with one entry per token of ``ids`` (mask, token types, modality ids)."""
    import torch

    return [
        k
        for k, v in inputs.items()
        if torch.is_tensor(v) and v.dim() == 2 and tuple(v.shape) == tuple(ids.shape)
    ]
