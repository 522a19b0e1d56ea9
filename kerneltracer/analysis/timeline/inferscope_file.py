"""Write the InferScope trace file chunk by chunk, validating as it goes.

A million-event trace is over a gigabyte as Python dicts; streamed, only one chunk of
event dicts exists at a time. The file appears atomically (temp file, fsync, rename).
"""

from __future__ import annotations

import gzip
from datetime import datetime
from pathlib import Path

import orjson

from kerneltracer.analysis.timeline.convert import InferScopeConverter
from kerneltracer.analysis.timeline.loader import ChromeTrace
from kerneltracer.analysis.timeline.validate import ValidationReport, Validator
from kerneltracer.jsonio import atomic_writer


def write_inferscope(
    trace: ChromeTrace, path: Path, created: datetime | None = None
) -> ValidationReport:
    """Write ``path`` (gzipped JSON) and return the constraint check of what was written."""
    conv = InferScopeConverter(trace, created)
    validator = Validator()
    with (
        atomic_writer(path) as raw,
        gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=3, mtime=0) as gz,
    ):
        gz.write(orjson.dumps(conv.header())[:-1] + b',"events":[')
        sep = b""
        for chunk in conv.event_chunks():
            validator.feed(chunk)
            if chunk:
                gz.write(sep + orjson.dumps(chunk)[1:-1])
                sep = b","
        relationships = conv.relationships()
        gz.write(b'],"relationships":' + orjson.dumps(relationships) + b"}")
    return validator.finish(relationships["scopes"])
