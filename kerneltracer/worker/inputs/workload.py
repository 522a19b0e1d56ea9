"""What one step runs, by phase: a forward (prefill), one decode step, or generate().

A decode step must look the same every time a tracer repeats it (warm-up, profiler steps,
compile then run), but a KV cache grows on every forward. Each step therefore gets a fresh
shallow copy of the cache objects built at load time: the tensors are shared, the Python
containers that the forward rebinds are not, and copying them dispatches no aten op, so
nothing but the model's own ops lands in a trace.
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from typing import Any

from kerneltracer.errors import UnsupportedError

PHASES = ("prefill", "decode", "generate")


class Workload(ABC):
    phase: str
    # What the inputs were built from (set by build_workload): a failing step is explained
    # against it (see diagnose).
    spec: Any = None

    @abstractmethod
    def inputs(self) -> dict[str, Any]:
        """Keyword arguments for one forward, fresh on every call."""

    def run(self, model: Any) -> Any:
        return model(**self.inputs())


class Forward(Workload):
    phase = "prefill"

    def __init__(self, inputs: dict[str, Any]) -> None:
        self._inputs = inputs

    def inputs(self) -> dict[str, Any]:
        return dict(self._inputs)


class Decode(Workload):
    """One new token attending to a KV cache: query length 1, key length ``seq_len``."""

    phase = "decode"

    def __init__(self, step_inputs: dict[str, Any], cache_arg: str) -> None:
        self._inputs, self.cache_arg = step_inputs, cache_arg

    def inputs(self) -> dict[str, Any]:
        out = dict(self._inputs)
        out[self.cache_arg] = fresh(out[self.cache_arg])
        return out


class Generate(Workload):
    phase = "generate"

    def __init__(self, prompt: dict[str, Any], new_tokens: int, pad_token_id: int | None) -> None:
        self._prompt, self.new_tokens, self.pad_token_id = prompt, new_tokens, pad_token_id

    def inputs(self) -> dict[str, Any]:
        return dict(self._prompt)

    def run(self, model: Any) -> Any:
        return model.generate(
            **self.inputs(),
            max_new_tokens=self.new_tokens,
            min_new_tokens=self.new_tokens,  # exactly N steps, whatever the random model says
            do_sample=False,
            num_beams=1,
            use_cache=True,
            pad_token_id=self.pad_token_id,
        )


def fresh(value: Any, memo: dict[int, Any] | None = None) -> Any:
    """A copy of the containers around tensors; tensors and modules themselves are shared."""
    import torch

    memo = {} if memo is None else memo
    if id(value) in memo:
        return memo[id(value)]
    if torch.is_tensor(value) or isinstance(value, torch.nn.Module | type):
        return value
    if isinstance(value, list):
        out: Any = [fresh(v, memo) for v in value]
    elif isinstance(value, dict):
        out = {k: fresh(v, memo) for k, v in value.items()}
    elif isinstance(value, tuple) and not hasattr(value, "_fields"):
        out = tuple(fresh(v, memo) for v in value)
    elif hasattr(value, "__dict__") and not isinstance(value, int | float | str | bytes):
        out = copy.copy(value)
        memo[id(value)] = out
        for key, item in vars(value).items():
            out.__dict__[key] = fresh(item, memo)
        return out
    else:
        return value
    memo[id(value)] = out
    return out


def check_phase(phase: str, model: Any, train: bool) -> None:
    """Decide before any input is built whether the phase applies to this model."""
    name = type(model).__name__
    if phase == "prefill":
        return
    if train:
        raise UnsupportedError(f"phase {phase} is an inference step: use mode eval")
    can_generate = getattr(model, "can_generate", None)
    if not (callable(can_generate) and can_generate()):
        raise UnsupportedError(
            f"phase {phase} needs a model that generates (…ForCausalLM, …ForConditionalGeneration);"
            f" {name} does not"
        )
