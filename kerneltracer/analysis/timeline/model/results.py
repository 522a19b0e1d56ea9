"""Analysis result models (bottleneck, breakdown, evidence, suggestions).

They are the shape of the ``analysis`` part of reports. Plain dataclasses, not pydantic
models: they hold what our own analyses computed, never a file's input, and building six
pydantic models (plus importing pydantic, ~0.1 s) was a third of a small trace's
``timeline``. Each coerces its numbers as pydantic's lax mode did (an int or a numpy scalar
in a float field is a float, in an int field an int), so a report's JSON is unchanged, and
keeps the constraints the models declared. :meth:`to_json` is the old ``model_dump(mode="json")``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

# The values a field takes (the pydantic models' Literal types, checked at construction).
BOTTLENECK_TYPES = ("cpu_bound", "gpu_bound", "memory_bound", "balanced")
PRIORITIES = ("high", "medium", "low")


def _coerce(obj: Any) -> None:
    """Numbers to the field's own type (``float`` / ``int`` / ``float | None``), in place."""
    for f in fields(obj):
        value = getattr(obj, f.name)
        if value is None:
            continue
        if f.type in ("float", "float | None"):
            object.__setattr__(obj, f.name, float(value))
        elif f.type == "int":
            object.__setattr__(obj, f.name, int(value))


class _Result:
    def to_json(self) -> dict[str, Any]:
        """The fields as plain JSON values, nested results included (field order kept)."""
        out: dict[str, Any] = asdict(self)  # type: ignore[call-overload]
        return out


@dataclass
class Summary(_Result):
    end_to_end_latency_us: float
    total_cpu_time_us: float  # union of host busy time over all threads
    total_gpu_time_us: float  # union of GPU kernel time over all streams
    total_h2d_us: float
    total_d2h_us: float
    total_idle_us: float  # time with neither host work nor GPU work
    gpu_idle_us: float | None  # window minus all GPU activity; None if no GPU
    # union of CUDA runtime/driver API time outside synchronize calls
    framework_overhead_us: float
    has_gpu: bool
    event_count: int  # timed events (any category) in the window
    kernel_count: int
    h2d_count: int
    d2h_count: int

    def __post_init__(self) -> None:
        _coerce(self)
        self.has_gpu = bool(self.has_gpu)


@dataclass
class BreakdownEntry(_Result):
    category: str
    duration_us: float
    percentage: float
    examples: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        _coerce(self)
        self.examples = list(self.examples)


@dataclass
class Bottleneck(_Result):
    type: str  # one of BOTTLENECK_TYPES
    primary_cause: str
    confidence: float  # 0 to 1
    evidence: list[str]

    def __post_init__(self) -> None:
        _coerce(self)
        if self.type not in BOTTLENECK_TYPES:
            raise ValueError(f"bottleneck type {self.type!r} is none of {BOTTLENECK_TYPES}")
        if not 0.0 <= self.confidence <= 1.0:
            raise ValueError(f"confidence {self.confidence} is not within [0, 1]")
        self.evidence = list(self.evidence)


@dataclass
class Suggestion(_Result):
    priority: str  # one of PRIORITIES
    action: str
    rationale: str
    estimated_improvement_percent: float
    evidence: list[str]  # at least one line

    def __post_init__(self) -> None:
        _coerce(self)
        if self.priority not in PRIORITIES:
            raise ValueError(f"priority {self.priority!r} is none of {PRIORITIES}")
        if not self.evidence:
            raise ValueError("a suggestion needs at least one line of evidence")
        self.evidence = list(self.evidence)


@dataclass
class BottleneckResult(_Result):
    window_start_us: float
    window_end_us: float
    summary: Summary
    timeline_breakdown: list[BreakdownEntry]
    bottleneck: Bottleneck
    suggestions: list[Suggestion]
    analysis_version: str = "1.0"

    def __post_init__(self) -> None:
        _coerce(self)
        self.timeline_breakdown = list(self.timeline_breakdown)
        self.suggestions = list(self.suggestions)

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        # The models' field order, which the report's JSON keeps: the version first.
        return {"analysis_version": out.pop("analysis_version"), **out}


@dataclass
class StepResult(_Result):
    step: str
    start_us: float
    duration_us: float
    timeline_breakdown: list[BreakdownEntry]
    bottleneck: Bottleneck

    def __post_init__(self) -> None:
        _coerce(self)
        self.timeline_breakdown = list(self.timeline_breakdown)
