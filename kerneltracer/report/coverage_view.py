"""The coverage page's data, from the coverage package (kerneltracer.coverage).

Coverage is one part of the report: if it cannot be built, the report still renders and
says why on the coverage page, and the CLI prints it as a warning.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from markupsafe import Markup

from kerneltracer.report.pictures import NamedOp, fleet_heatmap, named, overloads_by_packet

if TYPE_CHECKING:
    from kerneltracer.coverage import Coverage

# Beyond this many models an ops x models table is wider than any screen; the page shows
# per-op totals instead and links the full matrix CSV.
_MAX_MATRIX_MODELS = 40
TOP_N = 30
_TOP_MEASURED = "measured"
_TOP_ESTIMATED = "estimated"


@dataclass(frozen=True)
class CoverageView:
    available: bool
    note: str | None = None
    source: str = ""
    models: tuple[str, ...] = ()
    ops: tuple[str, ...] = ()
    matrix: dict[str, dict[str, int]] = field(default_factory=dict)
    signatures: dict[str, dict[str, int]] = field(default_factory=dict)  # op -> model -> n
    unique: dict[str, list[str]] = field(default_factory=dict)
    # dispatch overload names; the profiler's name, where it differs, in NamedOp.other
    top: tuple[NamedOp, ...] = ()
    # what ranks ``top``: profiled self time when a profile exists, else the time estimated
    # from shapes (never shown as measured)
    top_kind: str = _TOP_MEASURED
    top_note: str = ""
    files: tuple[str, ...] = ()  # written next to the report, relative to it
    fake_models: tuple[str, ...] = ()  # traced with weights fake: counts, no times
    # label -> "mode · phase" of each model variant (a column of the matrix)
    variants: dict[str, str] = field(default_factory=dict)
    displays: dict[str, str] = field(default_factory=dict)  # label -> the model's display id
    distinct_models: int = 0  # models, not variants
    heatmap: Markup = field(default_factory=Markup)
    heat_ops: int = 0
    heat_models: int = 0
    coverage: Coverage | None = None  # for the model pages' op charts

    @property
    def full_matrix(self) -> bool:
        return len(self.models) <= _MAX_MATRIX_MODELS


def build_coverage_view(run_dir: Path, out_dir: Path) -> CoverageView:
    """Build the coverage of ``run_dir``, write its files into ``out_dir``, return the view."""
    from kerneltracer.coverage import build_coverage, write_coverage

    cov = build_coverage(run_dir)
    written = write_coverage(cov, out_dir)
    files = tuple(sorted(str(Path(p).relative_to(out_dir)) for p in written))
    sources = cov.preferred_sources()
    source = next((s for s in sources if cov.ops(s)), sources[0] if sources else "")
    if not source:
        note = "no ok job with an artefact coverage reads (dispatch summary, profile) yet"
        return CoverageView(False, note, files=files)
    # Ranked before naming: merging profiler names into one packet can reorder a few.
    top = cov.top_ops_by_time(TOP_N * 2)
    kind, note = _TOP_MEASURED, "self time recorded by the profiler, summed over models"
    if not top:
        top = cov.top_ops_by_est_time(TOP_N * 2)
        kind = _TOP_ESTIMATED
        note = (
            f"no profile in this run: estimated from shapes (roofline time lower bound on "
            f"{cov.est_device}, summed over models), not measured"
        )
    labels = cov.models_for(source)
    heat, heat_ops, heat_models = fleet_heatmap(cov, source)
    return CoverageView(
        available=True,
        source=source,
        models=tuple(labels),
        ops=tuple(cov.ops(source)),
        matrix=cov.matrix(source),
        signatures=cov.signatures(source),
        unique=cov.unique_ops(source),
        top=tuple(named(top, overloads_by_packet(cov.ops(source)))[:TOP_N]),
        top_kind=kind,
        top_note=note,
        fake_models=cov.fake_models,
        files=files,
        variants={m: f"{cov.variant(m)[1]} · {cov.variant(m)[2]}" for m in labels},
        displays={m: cov.variant(m)[0] for m in labels},
        distinct_models=len(cov.distinct_models(labels)),
        heatmap=heat,
        heat_ops=heat_ops,
        heat_models=heat_models,
        coverage=cov,
    )


def unavailable(why: str) -> CoverageView:
    return CoverageView(False, why)
