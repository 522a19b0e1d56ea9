"""The readiness page's data: what `kerneltracer readiness` (and `replay`) left in the
report dir. The report never picks a target backend itself; without a readiness file the
page says how to make one. A corrupt file is a note on the page, not a failed report.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from markupsafe import Markup

from kerneltracer.core.layout import REPORT, ReportPaths
from kerneltracer.corpus.readiness_export import BLOCKERS_CSV, JSON, RANKED_CSV, ReadinessFile
from kerneltracer.report.charts import Bar, bar_chart

FAILURES_SHOWN = 100
_RANKED_CHART = 30


@dataclass(frozen=True)
class ReplaySummary:
    counts: dict[str, int]
    device: str
    failures: list[dict[str, Any]]  # op, sig_id, status, reason


@dataclass(frozen=True)
class ReadinessView:
    available: bool
    note: str | None = None
    data: ReadinessFile | None = None
    files: tuple[str, ...] = ()
    replay: ReplaySummary | None = None
    blocked: dict[str, list[Any]] = field(default_factory=dict)
    # models ready after each op added, in rank order; missing ops per model
    ready_chart: Markup = field(default_factory=Markup)
    missing_chart: Markup = field(default_factory=Markup)
    distinct_models: int = 0  # models behind the variants assessed (0: not known)


def build_readiness_view(out_dir: Path, displays: dict[str, str] | None = None) -> ReadinessView:
    """``displays``: model label -> display id (the coverage's), to count distinct models."""
    from kerneltracer.corpus.readiness_export import read_readiness
    from kerneltracer.corpus.replay_export import JSON as REPLAY_JSON

    report = ReportPaths(out_dir)
    replay = _replay(report.replay / REPLAY_JSON)
    try:
        data = read_readiness(report.readiness / JSON)
    except ValueError as exc:
        return ReadinessView(False, str(exc), replay=replay)
    if data is None:
        how = "run `kerneltracer readiness RUN_DIR --support FILE` or `--dispatch-key KEY`"
        return ReadinessView(False, f"no readiness assessment yet: {how}", replay=replay)
    files = tuple(str(REPORT.readiness / n) for n in (JSON, RANKED_CSV, BLOCKERS_CSV))
    blocked = {m: bs for m, bs in data.blockers.items() if bs}
    ready = bar_chart(
        [
            Bar(f"{o.rank}. {o.op}", o.ready_after, f"after adding {o.op}: {o.ready_after} ready")
            for o in data.ranked[:_RANKED_CHART]
        ],
        "models ready after each op added",
        lambda v: f"{v:.0f} of {len(data.models)} ready",
    )
    missing = bar_chart(
        [Bar(m, len(data.blockers.get(m, []))) for m in data.models],
        "missing ops per model",
        lambda v: f"{v:.0f} missing",
    )
    return ReadinessView(
        True,
        data=data,
        files=files,
        replay=replay,
        blocked=blocked,
        ready_chart=ready,
        missing_chart=missing,
        distinct_models=len({(displays or {}).get(m, m) for m in data.models}) if displays else 0,
    )


def _replay(path: Path) -> ReplaySummary | None:
    try:
        doc = orjson.loads(path.read_bytes())
        failures = [r for r in doc["results"] if r.get("status") != "ok"]
        return ReplaySummary(dict(doc["counts"]), str(doc["device"]), failures[:FAILURES_SHOWN])
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError):
        return None
