"""The JSON Schemas of the intermediate files, shipped in the package.

:func:`schema_for` maps a path inside an intermediate directory to its schema; JSONL files
are validated line by line (the first line of ``raw.jsonl`` is the string table).
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import orjson


@cache
def load_schema(name: str) -> dict[str, Any]:
    text = resources.files("kerneltracer.analysis.structured_logs").joinpath(
        "schemas", f"{name}.schema.json"
    )
    data: dict[str, Any] = orjson.loads(text.read_bytes())
    return data


def schema_for(rel: str) -> str | None:
    """Schema name for an intermediate file (relative path); None for unknown files."""
    name = rel.rsplit("/", 1)[-1]
    if rel == "manifest.json" or (rel.endswith("/manifest.json") and rel.count("/") == 1):
        return "manifest"
    if name == "string_table.json":
        return "string_table"
    if name == "raw.jsonl":
        return "raw_entry"
    if name == "chromium_events.json":
        return "chromium_events"
    if name == "summary.json":
        return "summary"
    if name.endswith(".jsonl"):
        return "event"
    return None
