"""Markdown rendering of a timeline report document (the JSON report is the input)."""

from __future__ import annotations

from typing import Any


def _cell(text: Any, width: int = 90) -> str:
    s = str(text).replace("\n", " ").replace("|", "\\|").replace("`", "'")
    return s if len(s) <= width else s[: width - 1] + "…"


def _us(v: float | None) -> str:
    return "–" if v is None else f"{v:,.1f}"


def render_markdown(doc: dict[str, Any]) -> str:
    a = doc["analysis"]
    lines = [f"# {_cell(doc['title'], 200)}", "", doc["summary"], ""]
    lines += _summary(a["summary"])
    lines += _gpu_time(doc.get("gpu_time") or [])
    lines += _breakdown("Timeline breakdown (whole trace)", a["timeline_breakdown"])
    bn = a["bottleneck"]
    lines += [
        "## Bottleneck",
        "",
        f"**{bn['type']}** — primary cause `{bn['primary_cause']}`, "
        f"confidence {bn['confidence']:.2f}",
        "",
        *[f"- {_cell(e, 200)}" for e in bn["evidence"]],
        "",
    ]
    lines += _suggestions(a["suggestions"])
    for r in doc["ranks"]:
        lines += _rank(r)
    lines += _steps(doc["steps"])
    lines += _validation(doc.get("validation"))
    return "\n".join(lines) + "\n"


def _summary(s: dict[str, Any]) -> list[str]:
    rows = [
        ("End-to-end latency", s["end_to_end_latency_us"]),
        ("CPU busy (union)", s["total_cpu_time_us"]),
        ("GPU kernels busy (union)", s["total_gpu_time_us"]),
        ("H2D copies (union)", s["total_h2d_us"]),
        ("D2H copies (union)", s["total_d2h_us"]),
        ("GPU idle", s["gpu_idle_us"]),
        ("Nothing running", s["total_idle_us"]),
        ("CUDA API outside syncs", s["framework_overhead_us"]),
    ]
    out = ["## Summary", "", "| metric | µs |", "|---|---:|"]
    out += [f"| {k} | {_us(v)} |" for k, v in rows]
    return [*out, ""]


def _gpu_time(figures: list[dict[str, Any]]) -> list[str]:
    if not figures:
        return []
    out = [
        "## GPU time: one figure per definition",
        "",
        "| figure | µs | window | definition |",
        "|---|---:|---|---|",
    ]
    out += [
        f"| {f['figure']} | {f['us']:,.1f} | {f['window']} | {f['definition']} |" for f in figures
    ]
    return [*out, ""]


def _breakdown(title: str, entries: list[dict[str, Any]]) -> list[str]:
    out = [f"## {title}", "", "| category | µs | % | top names |", "|---|---:|---:|---|"]
    for e in entries:
        names = ", ".join(_cell(n, 40) for n in e.get("examples", []))
        out.append(
            f"| {e['category']} | {_us(e['duration_us'])} | {e['percentage']:.2f} | {names} |"
        )
    total = sum(e["percentage"] for e in entries)
    return [*out, f"| **total** | | {total:.2f} | |", ""]


def _suggestions(items: list[dict[str, Any]]) -> list[str]:
    if not items:
        return ["## Suggestions", "", "Nothing stands out.", ""]
    out = ["## Suggestions", ""]
    for i, s in enumerate(items, 1):
        out.append(
            f"{i}. **[{s['priority']}] {_cell(s['action'], 300)}** "
            f"(up to {s['estimated_improvement_percent']:g}%) — {_cell(s['rationale'], 300)}"
        )
        out += [f"   - evidence: {_cell(e, 200)}" for e in s["evidence"]]
    return [*out, ""]


def _rank(r: dict[str, Any]) -> list[str]:
    out = [f"## GPU breakdown, rank {r['rank']}", ""]
    t = r["temporal_breakdown"]
    if t is None:
        return [*out, r.get("note") or "No GPU activity.", ""]
    out += [
        "| idle % | compute % | non-compute % | GPU span µs |",
        "|---:|---:|---:|---:|",
        f"| {t['idle_pct']:.2f} | {t['compute_pct']:.2f} | {t['non_compute_pct']:.2f} | "
        f"{_us(t['kernel_time_us'])} |",
        "",
        "| kernel type | µs (union) | % |",
        "|---|---:|---:|",
    ]
    by_type = r["kernel_breakdown"]["by_type"]
    out += [f"| {k['kernel_type']} | {_us(k['sum_us'])} | {k['percentage']:.2f} |" for k in by_type]
    total = sum(k["sum_us"] for k in by_type)
    out += [f"| **kernels, memcpys, memsets (union)** | {_us(total)} | |", ""]
    overlap = r.get("comm_comp_overlap") or {}
    if overlap.get("overlap_pct") is not None:
        out += [
            f"Communication / computation overlap (HTA's definition): "
            f"{overlap['overlap_pct']:.2f}% of the {_us(overlap['communication_us'])} µs "
            "communication kernels run (union) overlap a computation kernel.",
            "",
        ]
    per_device = r.get("temporal_breakdown_per_device") or []
    if per_device:
        out += ["| GPU | idle % | compute % | non-compute % |", "|---:|---:|---:|---:|"]
        out += [
            f"| {d['device']} | {d['idle_pct']:.2f} | {d['compute_pct']:.2f} | "
            f"{d['non_compute_pct']:.2f} |"
            for d in per_device
        ]
        out.append("")
    for ktype, stats in r["kernel_breakdown"]["top_kernels"].items():
        out += [
            f"### Top {ktype.lower()} kernels",
            "",
            "| kernel | count | sum of durations µs | mean µs | % of type |",
            "|---|---:|---:|---:|---:|",
        ]
        out += [
            f"| `{_cell(k['name'])}` | {k['count']} | {_us(k['sum_us'])} | {_us(k['mean_us'])} | "
            f"{k['pct_of_type']:.2f} |"
            for k in stats
        ]
        out.append("")
    return out


def _steps(steps: list[dict[str, Any]]) -> list[str]:
    if not steps:
        return []
    out = [
        "## Per step",
        "",
        "| step | ms | bottleneck | GPU compute % | idle % |",
        "|---|---:|---|---:|---:|",
    ]
    for st in steps:
        pct = {e["category"]: e["percentage"] for e in st["timeline_breakdown"]}
        out.append(
            f"| {_cell(st['step'], 40)} | {st['duration_us'] / 1000:.3f} "
            f"| {st['bottleneck']['type']} | "
            f"{pct.get('gpu_compute', 0):.2f} | {pct.get('idle', 0):.2f} |"
        )
    return [*out, ""]


def _validation(v: dict[str, Any] | None) -> list[str]:
    if v is None:
        return []
    out = ["## Trace model constraints", ""]
    if not v["counts"]:
        return [
            *out,
            f"All {v['checked_events']} events and {v['checked_scopes']} scopes pass.",
            "",
        ]
    out += ["| constraint | violations |", "|---|---:|"]
    out += [f"| {k} | {n} |" for k, n in v["counts"].items()]
    out.append("")
    shown = [x for x in v["violations"] if x["severity"] == "error"][:20]
    out += [
        f"- `{x['constraint']}` {', '.join(x['ids'])}: {_cell(x['detail'], 200)}" for x in shown
    ]
    return [*out, ""]


def render_rank_summary(table: dict[str, Any]) -> str:
    out = [
        "# Ranks",
        "",
        "| rank | file | latency ms | mean step ms | GPU busy % | GPU idle % | "
        "compute % | non-compute % | comm/comp overlap % | bottleneck |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in table["ranks"]:
        t = r["temporal_breakdown"] or {}
        step = f"{r['mean_step_us'] / 1000:.3f}" if r["mean_step_us"] is not None else "–"
        out.append(
            f"| {r['rank']} | {_cell(r['source_file'], 60)} "
            f"| {r['end_to_end_latency_us'] / 1000:.3f} | {step} | "
            f"{_us(r['gpu_busy_pct'])} | {_us(r['gpu_idle_pct'])} | {_us(t.get('compute_pct'))} | "
            f"{_us(t.get('non_compute_pct'))} | {_us(r.get('comm_comp_overlap_pct'))} | "
            f"{r['bottleneck']} |"
        )
    out.append("")
    if table["stragglers"]:
        out += ["## Stragglers", ""]
        out += [
            f"- rank {s['rank']} ({_cell(s['source_file'], 60)}): {s['metric']} "
            f"{s['value']:,.1f} is {s['ratio']:.2f}× the median "
            f"({s['median']:,.1f})"
            for s in table["stragglers"]
        ]
    else:
        out.append("No stragglers (no rank more than 10% above the median).")
    multi = table.get("multi_rank")
    if multi:
        out += ["", *_multi_rank_lines(multi)]
    return "\n".join(out) + "\n"


def _multi_rank_lines(m: dict[str, Any]) -> list[str]:
    out = [
        "## Waiting in collectives",
        "",
        "A rank waits in a collective from its own start until the last rank of the call "
        "has started it; calls are matched across ranks by process group, collective and "
        f"order. {m['matched_collectives']} calls matched, {m['unmatched_calls']} unmatched.",
        "",
        "| rank | calls | matched | collective ms | waiting ms | waiting % "
        "| others waited on it ms |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in m["ranks"]:
        out.append(
            f"| {r['rank']} | {r['collective_calls']} | {r['matched_calls']} | "
            f"{r['collective_us'] / 1000:.3f} | {r['wait_us'] / 1000:.3f} | "
            f"{_us(r['wait_pct'])} | {r['waited_on_us'] / 1000:.3f} |"
        )
    out.append("")
    if m["steps"]:
        out += [
            "## Straggler per step",
            "",
            "| step | straggler rank | basis | ms | ranks |",
            "|---:|---:|---|---:|---:|",
        ]
        out += [
            f"| {s['step']} | {s['rank']} | {s['basis'].replace('_', ' ')} | "
            f"{s['value_us'] / 1000:.3f} | {s['ranks']} |"
            for s in m["steps"]
        ]
        out.append("")
    out += [f"Note: {n}." for n in m["notes"]]
    return out
