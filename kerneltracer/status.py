"""``_TRACE_STATUS.json``: re-exported from :mod:`kerneltracer.core.status`, where it lives."""

from __future__ import annotations

from kerneltracer.core.status import (
    FAILURE_STATUSES,
    SCHEMA_VERSION,
    ErrorInfo,
    JobStatus,
    OutputFile,
    TraceStatus,
    base_status,
    describe_output,
    host_pid,
    incomplete_reason,
    now_iso,
    read_status,
    write_status,
)

__all__ = [
    "FAILURE_STATUSES",
    "SCHEMA_VERSION",
    "ErrorInfo",
    "JobStatus",
    "OutputFile",
    "TraceStatus",
    "base_status",
    "describe_output",
    "host_pid",
    "incomplete_reason",
    "now_iso",
    "read_status",
    "write_status",
]
