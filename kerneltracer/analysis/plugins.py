"""Analyses from outside the package: a module named on the command line (``--import``).

The module defines ``ANALYSES``, a mapping of analysis name to :class:`JobAnalysis`
subclass, like the registry does; they run beside the built-in ones. The classes must be
importable by the analysing process only: workers are forked from it.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping

from kerneltracer.analysis.base import JobAnalysis
from kerneltracer.errors import UsageError


def with_plugins(
    builtin: Mapping[str, type[JobAnalysis]], modules: Iterable[str]
) -> dict[str, type[JobAnalysis]]:
    """``builtin`` plus the analyses of every module; a clash or a bad module is an error."""
    analyses = dict(builtin)
    for module_name in modules:
        for name, cls in _module_analyses(module_name).items():
            if name in analyses:
                raise UsageError(f"analysis {name!r} of module {module_name!r} is already defined")
            analyses[name] = cls
    return analyses


def _module_analyses(module_name: str) -> dict[str, type[JobAnalysis]]:
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise UsageError(
            f"cannot import analysis module {module_name!r}: {type(exc).__name__}: {exc}"
        ) from exc
    found = getattr(module, "ANALYSES", None)
    if not isinstance(found, Mapping):
        raise UsageError(
            f"module {module_name!r} defines no ANALYSES mapping (name -> JobAnalysis subclass)"
        )
    bad = [str(k) for k, v in found.items() if not _is_analysis(v) or not isinstance(k, str)]
    if bad:
        raise UsageError(
            f"module {module_name!r}: ANALYSES[{bad[0]!r}] is not a JobAnalysis subclass"
        )
    return dict(found)


def _is_analysis(value: object) -> bool:
    return isinstance(value, type) and issubclass(value, JobAnalysis)
