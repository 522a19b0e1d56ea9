"""Analyses: read traces and logs, never mutate their inputs, write reports.

The face other packages import (contract `faces`; everything else is internal):

- ``registry``: the per-job analyses by name (``ANALYSES``); ``plugins``: third-party ones;
- ``runner``: run the selected analyses over a run dir; ``isolation``: each in a child with
  limits;
- ``compile_health``, ``records``, ``structured_logs``, ``timeline``: the analyses with a
  command or a report page of their own (each ``__init__`` names its face in turn).
"""

__all__ = [
    "compile_health",
    "isolation",
    "plugins",
    "records",
    "registry",
    "runner",
    "structured_logs",
    "timeline",
]
