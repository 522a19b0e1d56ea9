"""The record reporters: name → class. Adding one = a module + a line here."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from kerneltracer.analysis.records.model import ProfilingData
from kerneltracer.analysis.records.reporters.base import Reporter
from kerneltracer.core.registry import Registry

REPORTERS: Registry[type[Reporter]] = Registry(
    "reporter",
    [
        ".tracing:TracingReporter",
        ".summary:SummaryReporter",
        ".op_statistic:OpStatisticReporter",
        ".anomalies:AnomaliesReporter",
    ],
    package=__package__,
)


def reporter_classes(names: Iterable[str] | None = None) -> list[type[Reporter]]:
    """The reporters to run, in registry order; all of them when ``names`` is None, else
    those named, in that order (an unknown name is a usage error)."""
    if names is None:
        return list(REPORTERS.values())
    return [REPORTERS[n] for n in REPORTERS.check(names)]


def run_reporters(
    pds: Sequence[ProfilingData], prefix: Path, names: Iterable[str] | None = None
) -> list[Path]:
    written: list[Path] = []
    for cls in reporter_classes(names):
        written.extend(cls(pds).report(prefix))
    return written


__all__ = ["REPORTERS", "Reporter", "reporter_classes", "run_reporters"]
