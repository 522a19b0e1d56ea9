"""Explicit registry of record reporters: name → class. Adding one = a module + a line here."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from kerneltracer.analysis.records.model import ProfilingData
from kerneltracer.analysis.records.reporters.anomalies import AnomaliesReporter
from kerneltracer.analysis.records.reporters.base import Reporter
from kerneltracer.analysis.records.reporters.op_statistic import OpStatisticReporter
from kerneltracer.analysis.records.reporters.summary import SummaryReporter
from kerneltracer.analysis.records.reporters.tracing import TracingReporter
from kerneltracer.errors import UsageError, choices

REPORTERS: dict[str, type[Reporter]] = {
    "tracing": TracingReporter,
    "summary": SummaryReporter,
    "op_statistic": OpStatisticReporter,
    "anomalies": AnomaliesReporter,
}


def reporter_classes(names: Iterable[str] | None = None) -> list[type[Reporter]]:
    """The reporters to run, in registry order; all of them when ``names`` is None."""
    if names is None:
        return list(REPORTERS.values())
    wanted = list(dict.fromkeys(names))
    unknown = [n for n in wanted if n not in REPORTERS]
    if unknown:
        raise UsageError(f"unknown reporter(s): {', '.join(unknown)}; valid: {choices(REPORTERS)}")
    return [REPORTERS[n] for n in wanted]


def run_reporters(
    pds: Sequence[ProfilingData], prefix: Path, names: Iterable[str] | None = None
) -> list[Path]:
    written: list[Path] = []
    for cls in reporter_classes(names):
        written.extend(cls(pds).report(prefix))
    return written


__all__ = ["REPORTERS", "Reporter", "reporter_classes", "run_reporters"]
