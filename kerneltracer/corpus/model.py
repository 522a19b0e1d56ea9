"""The corpus data model: unique op call signatures with who calls them, and how often.

Values (inputs, kwargs, outputs) keep the JSON form torch_dispatch writes, whose format and
identity (``signature_id``) are :mod:`kerneltracer.core.signature`'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PHASES = ("forward", "backward")


@dataclass
class Signature:
    """One unique (op, inputs, kwargs) call, aggregated over models and phases."""

    sig_id: str
    op: str
    inputs: list[Any]
    kwargs: dict[str, Any]
    outputs: list[Any] | None  # None: not recorded (an operator_inp log)
    phase_calls: dict[str, int] = field(default_factory=dict)
    model_calls: dict[str, int] = field(default_factory=dict)
    # module path -> calls; indices folded past core.modulepaths.MAX_PATHS, never dropped
    modules: dict[str, int] = field(default_factory=dict)
    # model -> module path -> calls (bounded the same way): what per-module costs sum by
    model_modules: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def calls(self) -> int:
        return sum(self.model_calls.values())

    @property
    def models(self) -> list[str]:
        return sorted(self.model_calls)


@dataclass(frozen=True)
class CorpusProblem:
    """A job whose op table could not be read, or a line of it that was skipped."""

    model: str
    path: str  # relative to the run dir
    reason: str


@dataclass(frozen=True)
class Placement:
    """Where a model label's calls ran in a parallel layout: one rank (a simulation's role
    dir) of a job's layout, standing for ``ranks`` (its tp / dp peers run the same)."""

    layout: str  # "tp8.pp2"
    rank: int
    ranks: tuple[int, ...]
    tp: int = 1
    ep: int = 1
    pp: int = 1
    dp: int = 1


SINGLE = "single"  # the layout of a model label without a placement: one device


@dataclass
class Corpus:
    models: tuple[str, ...]  # sorted: every model whose torch_dispatch job was read
    signatures: list[Signature]  # sorted by op, then calls (most first), then id
    problems: list[CorpusProblem] = field(default_factory=list)
    not_ok: list[tuple[str, str]] = field(default_factory=list)  # (model, status) left out
    # Models traced with weights fake: their signatures are the real shapes, but no value
    # (integer ranges) was seen, and nothing of them was timed.
    fake_models: tuple[str, ...] = ()
    # The distinct models (display ids) behind ``models``, whose labels are per variant
    # (``tiny-llama [decode]``): one model traced in two phases is one model here.
    model_ids: tuple[str, ...] = ()
    # sig_id -> the call as operator_inp text, for every signature that text can hold inertly
    # (the build checks each once; one it cannot write is a problem there, and left out).
    log_calls: dict[str, str] = field(default_factory=dict)
    # Model labels of a parallel job's ranks (``model [tp8.pp2 rank 8]``) -> their place.
    placements: dict[str, Placement] = field(default_factory=dict)

    @property
    def distinct_models(self) -> tuple[str, ...]:
        return self.model_ids or self.models

    def ops(self) -> list[str]:
        return sorted({s.op for s in self.signatures})

    def by_model(self) -> dict[str, list[Signature]]:
        out: dict[str, list[Signature]] = {m: [] for m in self.models}
        for sig in self.signatures:
            for model in sig.model_calls:
                out.setdefault(model, []).append(sig)
        return out
