"""Analysis result models (bottleneck, breakdown, evidence, suggestions).

They are the shape of the ``analysis`` part of reports.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

_BottleneckType = Literal["cpu_bound", "gpu_bound", "memory_bound", "balanced"]
Priority = Literal["high", "medium", "low"]


class Summary(BaseModel):
    end_to_end_latency_us: float
    total_cpu_time_us: float = Field(description="union of host busy time over all threads")
    total_gpu_time_us: float = Field(description="union of GPU kernel time over all streams")
    total_h2d_us: float
    total_d2h_us: float
    total_idle_us: float = Field(description="time with neither host work nor GPU work")
    gpu_idle_us: float | None = Field(description="window minus all GPU activity; null if no GPU")
    framework_overhead_us: float = Field(
        description="union of CUDA runtime/driver API time outside synchronize calls"
    )
    has_gpu: bool
    event_count: int = Field(0, description="timed events (any category) in the window")
    kernel_count: int
    h2d_count: int
    d2h_count: int


class BreakdownEntry(BaseModel):
    category: str
    duration_us: float
    percentage: float
    examples: list[str] = Field(default_factory=list)


class Bottleneck(BaseModel):
    type: _BottleneckType
    primary_cause: str
    confidence: float = Field(ge=0.0, le=1.0)
    evidence: list[str]


class Suggestion(BaseModel):
    priority: Priority
    action: str
    rationale: str
    estimated_improvement_percent: float
    evidence: list[str] = Field(min_length=1)


class BottleneckResult(BaseModel):
    analysis_version: str = "1.0"
    window_start_us: float
    window_end_us: float
    summary: Summary
    timeline_breakdown: list[BreakdownEntry]
    bottleneck: Bottleneck
    suggestions: list[Suggestion]


class StepResult(BaseModel):
    step: str
    start_us: float
    duration_us: float
    timeline_breakdown: list[BreakdownEntry]
    bottleneck: Bottleneck
