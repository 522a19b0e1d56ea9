"""Stand-ins for real tracers in synthetic run dirs (the report's scale test and benches).

:mod:`kerneltracer.report.synth` writes jobs by what each stand-in writes and how it ends;
the tracer names live here, with the tracers, so nothing outside tracers/ names one.
"""

from __future__ import annotations

from dataclasses import dataclass

from kerneltracer.core.artefacts import ArtefactKind


@dataclass(frozen=True)
class SyntheticTracer:
    name: str
    writes: ArtefactKind  # the artefact its ok jobs get
    flaky: bool = False  # takes part in the deterministic mix of failures
    skipped_for: str | None = None  # always skipped: its exclusive group is satisfied by this
    truncated_status: bool = False  # the third-last model's status file is cut short


SIX_TRACERS = (
    SyntheticTracer("torch_dispatch", ArtefactKind.DISPATCH_SUMMARY),
    SyntheticTracer("torch_profiler", ArtefactKind.KEY_AVERAGES, flaky=True),
    SyntheticTracer("torch_compile", ArtefactKind.GRAPH_TEXT, flaky=True),
    SyntheticTracer("print_fx", ArtefactKind.GRAPH_TEXT, truncated_status=True),
    SyntheticTracer("print_aten", ArtefactKind.GRAPH_TEXT),
    SyntheticTracer("print_aten_export", ArtefactKind.GRAPH_TEXT, skipped_for="print_aten"),
)
