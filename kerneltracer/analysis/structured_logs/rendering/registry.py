"""Module sets (normal and export) and ``--modules`` / ``--skip-modules`` selection."""

from __future__ import annotations

from collections.abc import Iterable

from kerneltracer.analysis.structured_logs.rendering.base import OutputModule
from kerneltracer.analysis.structured_logs.rendering.modules.chromium import (
    ChromiumModule,
    RawModule,
)
from kerneltracer.analysis.structured_logs.rendering.modules.compile_directory import (
    CompileDirectoryModule,
)
from kerneltracer.analysis.structured_logs.rendering.modules.export import ExportModule
from kerneltracer.analysis.structured_logs.rendering.modules.graphs import GraphViewerModule
from kerneltracer.analysis.structured_logs.rendering.modules.guards import GuardsModule
from kerneltracer.analysis.structured_logs.rendering.modules.index import IndexModule
from kerneltracer.analysis.structured_logs.rendering.modules.inductor_code import InductorCodeModule
from kerneltracer.analysis.structured_logs.rendering.modules.metrics import (
    CompilationMetricsModule,
    FailuresModule,
)
from kerneltracer.analysis.structured_logs.rendering.modules.symbolic import SymbolicShapeModule
from kerneltracer.errors import UsageError

# The index comes last: it lists the links the other modules return.
ALL_MODULES: tuple[type[OutputModule], ...] = (
    CompileDirectoryModule,
    GraphViewerModule,
    InductorCodeModule,
    CompilationMetricsModule,
    FailuresModule,
    GuardsModule,
    ChromiumModule,
    RawModule,
    SymbolicShapeModule,
    ExportModule,
    IndexModule,
)
MODULE_NAMES = (*(m.name for m in ALL_MODULES), "multi_rank")
_NORMAL = tuple(m.name for m in ALL_MODULES if m is not ExportModule)
_EXPORT = ("compile_directory", "graphs", "chromium", "raw", "symbolic_shapes", "export")


def select_modules(
    export: bool, only: Iterable[str] | None = None, skip: Iterable[str] = ()
) -> list[OutputModule]:
    """Instances of the chosen modules, in run order; unknown names are a usage error."""
    only = list(only) if only else None
    skip = list(skip)
    for name in (only or []) + skip:
        if name not in MODULE_NAMES:
            raise UsageError(
                f"unknown render module {name!r}; valid modules: {', '.join(MODULE_NAMES)}"
            )
    default = _EXPORT if export else _NORMAL
    chosen = [n for n in (only or default) if n not in skip]
    return [m() for m in ALL_MODULES if m.name in chosen]
