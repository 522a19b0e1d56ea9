"""Multi-rank rendering: one report per rank plus desync / divergence diagnostics.

Ranks of one job should compile the same graphs in the same order with the same cache
behaviour; when they do not, collectives can hang or numerics diverge. Diagnostics compare,
across ranks: the set of compile ids, the sequence of artifact kinds per compile (which
includes cache hit/miss/bypass artifacts), and which ranks failed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from kerneltracer.analysis.structured_logs.rendering.base import RenderContext
from kerneltracer.analysis.structured_logs.rendering.html import render_page

_NUMBER = re.compile(r"_\d+(\.[^./]+)?$")


@dataclass
class RankView:
    rank: int
    inter: Path
    ctx: RenderContext
    failures: int = 0
    sequence: list[str] = field(default_factory=list)


def _artifact_sequence(ctx: RenderContext) -> list[str]:
    seq = []
    for key, arts in ctx.plan.by_compile.items():
        display = ctx.summaries[key]["display_id"]
        for a in arts:
            kind = _NUMBER.sub(lambda m: m.group(1) or "", a.name.rsplit("/", 1)[-1])
            seq.append(f"{display}:{kind}")
    return seq


def diagnostics(views: list[RankView]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    id_sets = {v.rank: tuple(s["display_id"] for s in v.ctx.summaries.values()) for v in views}
    groups = _group({r: " ".join(ids) for r, ids in id_sets.items()})
    if len(groups) > 1:
        out.append(
            {
                "kind": "compile_id_divergence",
                "title": "Ranks compiled different graphs",
                "detail": "The compile ids differ between ranks (possible desync / hang).",
                "groups": groups,
            }
        )
    seq_groups = _group({v.rank: " ".join(v.sequence) for v in views})
    if len(seq_groups) > 1:
        out.append(
            {
                "kind": "artifact_divergence",
                "title": "Ranks produced different artifacts",
                "detail": "Artifact or cache hit/miss sequences differ between ranks.",
                "groups": [
                    {"ranks": g["ranks"], "sequence": g["sequence"][:400]} for g in seq_groups
                ],
            }
        )
    failed = [v.rank for v in views if v.failures]
    if failed and len(failed) < len(views):
        out.append(
            {
                "kind": "failure_divergence",
                "title": "Only some ranks failed",
                "detail": f"Ranks with compile failures: {', '.join(map(str, failed))}.",
                "groups": [],
            }
        )
    return out


def _group(values: dict[int, str]) -> list[dict[str, str]]:
    by_value: dict[str, list[int]] = {}
    for rank, value in sorted(values.items()):
        by_value.setdefault(value, []).append(rank)
    return [
        {"ranks": ", ".join(map(str, ranks)), "sequence": value}
        for value, ranks in by_value.items()
    ]


def write_multi_rank_index(out: Path, views: list[RankView]) -> list[str]:
    diags = diagnostics(views)
    rows = [
        {
            "rank": v.rank,
            "n_compiles": len(v.ctx.summaries),
            "n_failures": v.failures,
            "total": v.ctx.manifest.get("total_envelopes", 0),
            "url": f"rank_{v.rank}/index.html",
        }
        for v in views
    ]
    (out / "index.html").write_text(
        render_page("multi_rank.html.j2", title="Multi-rank", ranks=rows, diagnostics=diags)
    )
    (out / "diagnostics.json").write_bytes(
        orjson.dumps(
            {"ranks": [r["rank"] for r in rows], "diagnostics": diags}, option=orjson.OPT_INDENT_2
        )
    )
    _merge_chromium(out, views)
    return ["index.html", "diagnostics.json", "chromium_events.json"]


def _merge_chromium(out: Path, views: list[RankView]) -> None:
    """One trace for all ranks: each rank's events with pid set to the rank.

    Streams line by line: stage 1 writes one event per line, so no rank's whole trace
    is ever held in memory.
    """
    with open(out / "chromium_events.json", "wb") as fh:
        fh.write(b"[\n")
        first = True
        for v in views:
            path = v.inter / "by_type" / "chromium_events.json"
            if not path.is_file():
                continue
            with open(path, "rb") as src:
                for line in src:
                    line = line.strip().rstrip(b",")
                    if not line.startswith(b"{"):
                        continue  # the array brackets
                    event = orjson.loads(line)
                    event["pid"] = v.rank
                    fh.write((b"" if first else b",\n") + orjson.dumps(event))
                    first = False
        fh.write(b"\n]\n")
