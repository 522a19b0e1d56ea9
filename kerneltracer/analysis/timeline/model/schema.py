"""The InferScope trace file (metadata, events, scopes) as pydantic models, and its JSON Schema.

The models are the single source of the schema: ``inferscope_trace.schema.json`` beside
this module is generated from them (``python -m kerneltracer.analysis.timeline.model.schema``)
and a test checks the two agree. The converter builds plain dicts for speed; the schema and
:func:`parse_inferscope` are how a consumer checks a file. Unknown fields are allowed
everywhere (readers skip unknown fields; new versions only add fields).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

# Re-exported: the converter owns the version it writes.

SCHEMA_PATH = Path(__file__).with_name("inferscope_trace.schema.json")

_EventType = Literal[
    "cpu_call", "cpu_syscall", "gpu_kernel", "h2d_copy", "d2h_copy", "memory_event", "instant"
]
EVENT_TYPES: tuple[str, ...] = _EventType.__args__  # type: ignore[attr-defined]


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class Event(_Open):
    id: str = Field(description="unique within the file")
    type: _EventType
    name: str
    timestamp_start_us: float | None = Field(None, description="absent for instant events")
    timestamp_end_us: float | None = None
    duration_us: float | None = None
    timestamp_us: float | None = Field(None, description="instant events only")
    wall_clock_start: str | None = Field(None, description="ISO 8601 UTC, null if unknown")
    wall_clock_end: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict, description="type-specific fields")


class Scope(_Open):
    id: str
    name: str
    parent_id: str | None
    child_ids: list[str]
    event_range: tuple[int, int] = Field(
        description="half-open [first, last+1) positions in `events` of the events that start "
        "inside the scope's time span (events are sorted by start time)"
    )
    start_us: float
    end_us: float
    thread: str | None = None


class Relationships(_Open):
    scopes: list[Scope]
    launches: list[tuple[str, str]] = Field(
        default_factory=list, description="(host launch event id, GPU event id) by correlation id"
    )


class TraceMetadata(_Open):
    timestamp_created: str
    duration_ms: float
    cuda_version: str | None = None
    python_version: str | None = None
    torch_version: str | None = None
    gpu_model: str | None = None
    hostname: str | None = None
    source_file: str | None = None
    rank: int | None = None
    world_size: int | None = None


class SystemInfo(_Open):
    cpu_count: int | None = None
    cpu_model: str | None = None
    numa_nodes: int | None = None
    ram_gb: float | None = None
    gpu_count: int


class InferScopeTrace(_Open):
    format_version: Literal["1.0"]
    trace_metadata: TraceMetadata
    system_info: SystemInfo
    events: list[Event]
    relationships: Relationships


def json_schema() -> dict[str, Any]:
    schema = InferScopeTrace.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "InferScope trace file"
    return schema


def parse_inferscope(doc: dict[str, Any]) -> InferScopeTrace:
    """Validate a decoded InferScope document against the models (raises pydantic errors)."""
    return InferScopeTrace.model_validate(doc)


if __name__ == "__main__":  # regenerate the checked-in schema file
    SCHEMA_PATH.write_text(json.dumps(json_schema(), indent=2, sort_keys=True) + "\n")
    sys.stdout.write(f"wrote {SCHEMA_PATH}\n")
