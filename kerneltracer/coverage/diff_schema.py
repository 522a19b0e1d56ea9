"""``diff.json``: the versioned schema of ``kerneltracer diff RUN_A RUN_B``.

A (model, tracer) is identified by the model's display id (plus `` [mode]`` for non-eval
modes) and the tracer name, so two runs made from different configs or machines still line
up. Only models with at least one change are listed under ``models``; an empty diff has no
models, no models only in one run and no problems. ``diff.schema.json`` beside this module
is this model's JSON Schema (a test keeps them in sync).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StatusChange(_Strict):
    tracer: str
    before: str | None = Field(description="status in RUN_A; null: the job is not in RUN_A")
    after: str | None = Field(description="status in RUN_B; null: the job is not in RUN_B")
    reason_before: str | None = None
    reason_after: str | None = Field(None, description="RUN_B's reason, e.g. the root cause")


class SourceOp(_Strict):
    source: str = Field(description="tracer the op table comes from, e.g. torch_dispatch")
    op: str


class CountChange(_Strict):
    source: str
    op: str
    calls_before: int
    calls_after: int
    signatures_before: int | None = None
    signatures_after: int | None = None


class TimeChange(_Strict):
    source: str
    op: str
    self_time_us_before: float
    self_time_us_after: float
    change: float | None = Field(description="(after - before) / before; null when before is 0")
    gpu_time: bool = Field(
        False,
        description="the times are the GPU time attributed to the op (op attribution of a "
        "trace with kernels) in both runs, not the profiler's self time",
    )


class ModelDiff(_Strict):
    model: str
    status_changes: list[StatusChange] = []
    ops_added: list[SourceOp] = []
    ops_removed: list[SourceOp] = []
    count_changes: list[CountChange] = []
    time_changes: list[TimeChange] = []


class Problem(_Strict):
    run: Literal["a", "b"]
    job_key: str
    path: str = Field(description="relative to that run dir")
    reason: str


class Thresholds(_Strict):
    min_time_change: float = Field(
        description="smallest relative self-time change reported (0.1 = 10%)"
    )
    min_time_us: float = Field(description="smallest absolute self-time change reported (us)")


class DiffSummary(_Strict):
    models_compared: int
    models_changed: int
    models_only_in_a: int
    models_only_in_b: int
    status_changes: int
    ops_added: int
    ops_removed: int
    count_changes: int
    time_changes: int
    problems: int


class DiffReport(_Strict):
    schema_version: Literal[1] = 1
    run_a: str
    run_b: str
    thresholds: Thresholds
    models_only_in_a: list[str] = []
    models_only_in_b: list[str] = []
    models: list[ModelDiff] = []
    problems: list[Problem] = Field(
        [], description="inputs that could not be read; their jobs were not compared"
    )
    summary: DiffSummary

    @property
    def has_changes(self) -> bool:
        """Anything differs between the runs (problems alone do not count as changes)."""
        return bool(self.models or self.models_only_in_a or self.models_only_in_b)
