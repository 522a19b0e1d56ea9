"""The GPU time figures of a timeline report: never negative, one definition each, labelled.

Issue 38, on TraceLens's H100 trace of Qwen1.5-0.5B (ns timestamps): Memset (Device) summed
to −18.0 µs, non-compute was −0.03%, and one page showed four GPU totals (45,647 / 45,433 /
43,981 / 49,652 µs) without saying what each one was. The cause: HTA's inward rounding of
ns timestamps (start up, end down) turns an event that holds no whole microsecond — a
0.5 µs memset — into a −1 µs interval, which the kernel statistics summed and the unions
subtracted. The trace below has the same shape: two ProfilerSteps, a GEMM and sub-µs
memsets per step, fractional timestamps.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kerneltracer.analysis.timeline.analyses.gpu_breakdown import (
    kernel_breakdown,
    select_gpu_work,
    temporal_breakdown,
)
from kerneltracer.analysis.timeline.load.loader import load_chrome_trace
from tests.timeline.traces import kernel, timeline_cli, write_trace, x

MEMSET = "Memset (Device)"


def _ns_trace(path: Path, steps: int = 3) -> Path:
    events: list[dict[str, Any]] = []
    corr = 0
    for s in range(steps):
        t = s * 1000.0
        events.append(x(f"ProfilerStep#{s}", "user_annotation", t, 999.0))
        events.append(x("aten::mm", "cpu_op", t + 10.125, 100.25))
        events.append(x("cudaLaunchKernel", "cuda_runtime", t + 20.5, 4.25, correlation=corr))
        events.append(kernel("sm90_xmma_gemm", t + 200.375, 300.5, corr=corr))
        for m in range(6):  # each inside one whole µs: no whole µs in it
            corr += 1
            at = t + 150.0625 + m * 10
            events.append(x("aten::zero_", "cpu_op", at, 5.5))
            events.append(x("cudaMemsetAsync", "cuda_runtime", at + 1, 2.5, correlation=corr))
            events.append(
                kernel(MEMSET, t + 600.25 + m * 2, 0.5, corr=corr) | {"cat": "gpu_memset"}
            )
        corr += 1
    return write_trace(path, events)


def _numbers(doc: Any, where: str = "") -> list[tuple[str, float]]:
    if isinstance(doc, dict):
        return [n for k, v in doc.items() for n in _numbers(v, f"{where}.{k}")]
    if isinstance(doc, list):
        return [n for i, v in enumerate(doc) for n in _numbers(v, f"{where}[{i}]")]
    if isinstance(doc, int | float) and not isinstance(doc, bool):
        return [(where, float(doc))]
    return []


def test_sub_microsecond_events_never_make_a_time_negative(tmp_path: Path) -> None:
    trace = load_chrome_trace(_ns_trace(tmp_path / "ns.json"))
    work = select_gpu_work(trace)
    tb = temporal_breakdown(work)
    assert tb is not None
    assert tb.non_compute_us >= 0 and tb.non_compute_pct >= 0
    assert tb.idle_us + tb.compute_us + tb.non_compute_us == pytest.approx(tb.kernel_time_us)
    kb = kernel_breakdown(work, trace.names)
    assert all(row["sum_us"] >= 0 for row in kb.by_type)
    # Per-kernel statistics are the events' own durations (2 steps of 6, the last excluded).
    memset = next(s for s in kb.top_kernels["MEMORY"] if s.name == MEMSET)
    assert (memset.count, memset.sum_us, memset.min_us, memset.max_us) == (12, 6.0, 0.5, 0.5)


def test_every_gpu_figure_of_the_report_is_labelled_and_non_negative(tmp_path: Path) -> None:
    done = timeline_cli(
        "--no-inferscope", str(_ns_trace(tmp_path / "ns.json")), "-o", str(tmp_path)
    )
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "ns" / "report.json").read_text())
    negative = [(k, v) for k, v in _numbers(report) if v < 0 and not k.endswith("rank")]
    assert negative == []
    figures = {f["figure"]: f for f in report["gpu_time"]}
    assert list(figures) == [
        "GPU span",
        "GPU busy (union)",
        "GPU kernels busy (union)",
        "GPU time summed",
    ]
    rank = report["ranks"][0]
    assert figures["GPU span"]["us"] == rank["temporal_breakdown"]["kernel_time_us"]
    busy = sum(r["sum_us"] for r in rank["kernel_breakdown"]["by_type"])
    assert figures["GPU busy (union)"]["us"] == busy == rank["temporal_breakdown"]["busy_us"]
    assert (
        figures["GPU kernels busy (union)"]["us"]
        == (report["analysis"]["summary"]["total_gpu_time_us"])
    )
    assert figures["GPU time summed"]["us"] == report["op_attribution"]["gpu_time_us"]
    for f in figures.values():
        assert f["definition"] and f["window"] in ("whole trace", "last ProfilerStep excluded")
    assert figures["GPU span"]["window"] == "last ProfilerStep excluded"
    md = (tmp_path / "ns" / "report.md").read_text()
    html = (tmp_path / "ns" / "report.html").read_text()
    for name, f in figures.items():
        assert f"| {name} | {f['us']:,.1f} | {f['window']} | {f['definition']} |" in md
        assert f"<td>{name}</td>" in html
    for text in (md, html, report["summary"]):  # HTA's name for a span, as a label
        assert "kernel time µs" not in text and "of kernel time" not in text
    assert "GPU span µs" in md and "over a " in report["summary"]
