"""The report's inline SVG charts and the numbers picked for them (no browser: the e2e
browser test checks they draw)."""

from __future__ import annotations

import re
from pathlib import Path
from xml.etree import ElementTree

import orjson

from kerneltracer.report.charts import Bar, Span, bar_chart, heatmap, histogram, track_view
from kerneltracer.report.collect import FileRef, Job
from kerneltracer.report.pictures import (
    compile_phases,
    dispatch_name,
    named,
    overloads_by_packet,
    timeline_chart,
)

EVIL = "<script>alert(1)</script>"


def _svg(markup: str) -> ElementTree.Element:
    return ElementTree.fromstring(str(markup))  # well-formed XML, or this raises


def test_bar_chart_escapes_labels_and_scales_to_the_largest() -> None:
    chart = bar_chart([Bar(EVIL, 10.0), Bar("aten.mm.default", 5.0)], EVIL, lambda v: f"{v}")
    assert "<script>" not in chart and "&lt;script&gt;" in chart
    rects = _svg(chart).findall(".//{http://www.w3.org/2000/svg}rect")
    widths = [float(r.get("width", 0)) for r in rects]
    assert widths[0] == 2 * widths[1] > 0
    assert bar_chart([], "empty", str) == ""


def test_histogram_counts_every_value_once() -> None:
    values = [1.0, 1.1, 2.0, 5.0, 5.0, 9.5, 10.0]
    chart = histogram(values, "durations", lambda v: f"{v:.1f}", bins=5)
    counts = [int(n) for n in re.findall(r"<title>(\d+) jobs?:", str(chart))]
    assert sum(counts) == len(values)
    assert histogram([float("nan")], "none", str) == ""
    one = histogram([3.0, 3.0], "same", str)  # all equal: one bin, no division by zero
    assert re.findall(r"<title>(\d+) jobs", str(one)) == ["2"]


def test_heatmap_leaves_ops_a_model_does_not_run_blank() -> None:
    calls = {("aten.mm.default", "a"): 10.0, ("aten.mm.default", "b"): 1.0, ("aten.add", "a"): 3.0}
    chart = heatmap(
        ["aten.mm.default", "aten.add"],
        [("a", "model a · eval · prefill"), ("b", EVIL)],
        lambda op, m: calls.get((op, m)),
        "ops x models",
        str,
    )
    rects = _svg(chart).findall(".//{http://www.w3.org/2000/svg}rect")
    assert len(rects) == len(calls)
    shades = sorted(float(r.get("fill-opacity", 0)) for r in rects)
    assert shades[0] < shades[-1]
    assert "<script>" not in chart


def test_track_view_carries_times_for_zooming() -> None:
    spans = [Span("w1", 0.0, 2.0, "a · torch_dispatch", "s-ok"), Span("w2", 1.0, 4.0, EVIL)]
    chart = track_view(spans, "jobs", lambda s: f"{s}s")
    root = _svg(chart)
    assert "zoomable" in root.get("class", "") and root.get("data-t1") == "4.000000"
    groups = root.findall(".//{http://www.w3.org/2000/svg}g")
    assert [(g.get("data-s"), g.get("data-e")) for g in groups] == [("0", "2"), ("1", "4")]
    assert len(root.findall(".//{http://www.w3.org/2000/svg}text")) == 2 + 2 + 2  # axis, tracks
    many = [Span("w", i, i + 0.5, f"job {i}") for i in range(400)]
    unlabelled = _svg(track_view(many, "jobs", str))
    assert len(unlabelled.findall(".//{http://www.w3.org/2000/svg}text")) == 2 + 1


def test_profiler_names_map_to_the_dispatch_overload() -> None:
    known = overloads_by_packet(["aten.addmm.default", "aten.add.Tensor", "aten.add.Scalar"])
    assert dispatch_name("aten::addmm", known) == "aten.addmm.default"
    assert dispatch_name("aten::add", known) == "aten.add"  # two overloads: the packet
    assert dispatch_name("aten::matmul", known) == "aten.matmul"  # never dispatched
    assert dispatch_name("ProfilerStep#1", known) == "ProfilerStep#1"
    merged = named([("aten::addmm", 3.0), ("aten.addmm.default", 1.0), ("x", 9.0)], known)
    assert [(o.op, o.other, o.value) for o in merged] == [
        ("x", "", 9.0),
        ("aten.addmm.default", "aten::addmm", 4.0),
    ]


def _job(key: str, **fields: object) -> Job:
    slug, column = key.split("/")
    base = dict(key=key, slug=slug, column=column, model=slug, tracer=column, mode="eval")
    return Job(**{**base, "status": "ok", **fields})  # type: ignore[arg-type]


def test_compile_phases_split_each_frame(tmp_path: Path) -> None:
    job_dir = tmp_path / "jobs" / "m" / "torch_compile"
    job_dir.mkdir(parents=True)
    frame = {
        "entire_frame_compile_time_s": 10.0,
        "backend_compile_time_s": 8.0,
        "inductor_compile_time_s": 7.0,
        "code_gen_time_s": 5.0,
    }
    (job_dir / "compile_summary.json").write_bytes(orjson.dumps({"frames": [frame, frame]}))
    job = _job("m/torch_compile", outputs=(FileRef("compile_summary.json", 1, None),))
    assert compile_phases(tmp_path, job) == {}  # no kind recorded: not a compile summary
    from kerneltracer.core.artefacts import ArtefactKind

    job = _job(
        "m/torch_compile",
        outputs=(FileRef("compile_summary.json", 1, ArtefactKind.COMPILE_SUMMARY),),
    )
    assert compile_phases(tmp_path, job) == {
        "dynamo": 4.0,
        "aot_autograd": 2.0,
        "inductor": 4.0,
        "codegen": 10.0,
    }


def test_timeline_puts_overlapping_jobs_on_separate_tracks() -> None:
    jobs = [
        _job(
            "a/t", started_at="2026-01-01T00:00:00+00:00", finished_at="2026-01-01T00:00:10+00:00"
        ),
        _job(
            "b/t", started_at="2026-01-01T00:00:05+00:00", finished_at="2026-01-01T00:00:08+00:00"
        ),
        _job(
            "c/t", started_at="2026-01-01T00:00:10+00:00", finished_at="2026-01-01T00:00:12+00:00"
        ),
    ]
    chart = str(timeline_chart(jobs))
    tracks = re.findall(r'class="lbl">(worker \d+)<', chart)
    assert tracks == ["worker 1", "worker 2"]
    assert timeline_chart([_job("x/t")]) == ""  # never started: nothing to draw


def test_model_op_charts_measure_when_profiled_else_estimate() -> None:
    from kerneltracer.coverage.matrix import Coverage, OpUse
    from kerneltracer.report.collect import ModelRow
    from kerneltracer.report.pictures import ESTIMATED, MEASURED, ModelOps, model_op_charts

    dispatch = [
        OpUse("aten.mm.default", label, "torch_dispatch", 4, 1, None, 10, 10, est)
        for label, est in (("llm", 2.0), ("llm [decode]", 0.5))
    ]
    profile = [OpUse("aten::mm", "llm", "torch_profiler", 8, None, 120.0)]
    cov = Coverage(
        models=("llm", "llm [decode]"),
        uses=(*dispatch, *profile),
        jobs_read=(
            ("llm", "torch_dispatch"),
            ("llm", "torch_profiler"),
            ("llm [decode]", "torch_dispatch"),
        ),
        source_kinds=(("torch_dispatch", "dispatch_summary"), ("torch_profiler", "key_averages")),
        variants={"llm": ("llm", "eval", "prefill"), "llm [decode]": ("llm", "eval", "decode")},
        est_device="H100",
    )
    ops = ModelOps.of(cov)  # built once per report, each model page takes its slice
    charts = model_op_charts(ops, ModelRow("llm", "llm"))
    assert [(c.variant.label, c.time_kind) for c in charts] == [
        ("eval · prefill", MEASURED),  # the profiler job of this variant
        ("eval · decode", ESTIMATED),  # no profiler job: from shapes, and says so
    ]
    assert "aten.mm.default" in charts[0].time_chart and "aten::mm" in charts[0].time_chart
    assert "not measured" in charts[1].time_note
    # Calls come from the dispatch trace (every aten call), not the profiler's count.
    assert ">4</text>" in charts[0].count_chart and ">8</text>" not in charts[0].count_chart
    assert model_op_charts(ops, ModelRow("other", "other")) == []
