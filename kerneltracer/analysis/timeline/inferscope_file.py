"""Write the InferScope trace file chunk by chunk, validating as it goes.

A million-event trace is over a gigabyte as Python dicts; streamed, only one chunk of
event dicts exists at a time. The file appears atomically (temp file, fsync, rename).
"""

from __future__ import annotations

import gzip
import os
import tempfile
from datetime import datetime
from pathlib import Path

import orjson

from kerneltracer.analysis.timeline.convert import InferScopeConverter
from kerneltracer.analysis.timeline.loader import ChromeTrace
from kerneltracer.analysis.timeline.validate import ValidationReport, Validator


def write_inferscope(
    trace: ChromeTrace, path: Path, created: datetime | None = None
) -> ValidationReport:
    """Write ``path`` (gzipped JSON) and return the constraint check of what was written."""
    conv = InferScopeConverter(trace, created)
    validator = Validator()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as raw:
            with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=3, mtime=0) as gz:
                gz.write(orjson.dumps(conv.header())[:-1] + b',"events":[')
                sep = b""
                for chunk in conv.event_chunks():
                    validator.feed(chunk)
                    if chunk:
                        gz.write(sep + orjson.dumps(chunk)[1:-1])
                        sep = b","
                relationships = conv.relationships()
                gz.write(b'],"relationships":' + orjson.dumps(relationships) + b"}")
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return validator.finish(relationships["scopes"])
