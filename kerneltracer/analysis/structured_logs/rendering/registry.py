"""The render modules, in run order, and ``--modules`` / ``--skip-modules`` selection."""

from __future__ import annotations

from collections.abc import Iterable

from kerneltracer.analysis.structured_logs.rendering.base import OutputModule
from kerneltracer.core.registry import Registry
from kerneltracer.errors import UsageError, choices

# The index comes last: it lists the links the other modules return.
MODULES: Registry[type[OutputModule]] = Registry(
    "render module",
    [
        ".modules.compile_directory:CompileDirectoryModule",
        ".modules.graphs:GraphViewerModule",
        ".modules.inductor_code:InductorCodeModule",
        ".modules.metrics:CompilationMetricsModule",
        ".modules.metrics:FailuresModule",
        ".modules.guards:GuardsModule",
        ".modules.chromium:ChromiumModule",
        ".modules.chromium:RawModule",
        ".modules.symbolic:SymbolicShapeModule",
        ".modules.export:ExportModule",
        ".modules.index:IndexModule",
    ],
    package=__package__,
)
# Not a module: the multi-rank index the renderer writes above the ranks' reports.
MULTI_RANK = "multi_rank"


def module_names() -> tuple[str, ...]:
    """What ``--modules`` and ``--skip-modules`` accept."""
    return (*MODULES, MULTI_RANK)


def select_modules(
    export: bool, only: Iterable[str] | None = None, skip: Iterable[str] = ()
) -> list[OutputModule]:
    """Instances of the chosen modules, in run order; unknown names are a usage error."""
    only = list(only) if only else None
    skip = list(skip)
    valid = module_names()
    for name in (only or []) + skip:
        if name not in valid:
            raise UsageError(f"unknown render module {name!r} (valid: {choices(valid)})")
    if only is None:
        only = [n for n, m in MODULES.items() if (m.in_export if export else m.in_normal)]
    return [m() for n, m in MODULES.items() if n in only and n not in skip]
