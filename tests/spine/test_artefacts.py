"""Artefact kinds: what each tracer's outputs are, recorded or derived from old names."""

from __future__ import annotations

from pathlib import Path

import pytest

from kerneltracer.analysis.base import AnalysisJob
from kerneltracer.core.artefacts import ArtefactKind as K
from kerneltracer.core.artefacts import kind_from_name, output_kinds
from kerneltracer.core.status import OutputFile
from kerneltracer.tracers.registry import TRACERS

# Output paths as each tracer really writes them (see its write()).
WRITES = {
    "torch_dispatch": {
        "dispatch_ops.jsonl": K.DISPATCH_SIGNATURES,
        "dispatch_summary.json": K.DISPATCH_SUMMARY,
        "dispatch_op_counts.csv": K.OP_COUNTS,
    },
    "torch_profiler": {
        "trace.json.gz": K.CHROME_TRACE,
        "key_averages.csv": K.KEY_AVERAGES,
        "key_averages.txt": K.PROFILER_TEXT,
    },
    "torch_compile": {
        "torch_trace/dedicated_log_torch_trace_abc.log": K.TORCH_TRACE_LOG,
        "inductor_code/c2/c2xyz.py": K.COMPILE_CODE,
        "compile_summary.json": K.COMPILE_SUMMARY,
    },
    "vllm_compile": {
        "torch_trace/dedicated_log_torch_trace_rank_0.log": K.TORCH_TRACE_LOG,
        "vllm_compile_code/torch_compile_cache/abc/rank_0_0/backbone/inductor_cache/x.py": (
            K.COMPILE_CODE
        ),
        "compile_summary.json": K.COMPILE_SUMMARY,
    },
    "vllm_profiler": {
        "profile/rank0.1712.pt.trace.json.gz": K.CHROME_TRACE,
        "profile/profiler_out_0.txt": K.PROFILER_TEXT,
        "op_table.csv": K.OP_TABLE,
    },
    "print_fx": {
        "graphs/graph_0.json": K.FX_GRAPH,
        "graphs/graph_0.txt": K.GRAPH_TEXT,
        "graphs/index.json": K.GRAPH_INDEX,
    },
    "print_aten": {
        "graphs/graph_1.json": K.ATEN_GRAPH,
        "graphs/graph_1.txt": K.GRAPH_TEXT,
        "graphs/index.json": K.GRAPH_INDEX,
    },
}


@pytest.mark.parametrize("tracer", sorted(WRITES))
def test_each_tracer_declares_the_kind_of_what_it_writes(tracer: str) -> None:
    cls = TRACERS[tracer]
    assert {path: cls.kind_of(path) for path in WRITES[tracer]} == WRITES[tracer]


@pytest.mark.parametrize("tracer", sorted(WRITES))
def test_old_status_files_get_the_same_kinds_from_the_names(tracer: str) -> None:
    # Only the level of a graph node table is the tracer's to know: by name it is fx_graph.
    expected = {p: K.FX_GRAPH if k == K.ATEN_GRAPH else k for p, k in WRITES[tracer].items()}
    assert {path: kind_from_name(path) for path in WRITES[tracer]} == expected


def test_recorded_kind_wins_and_unknown_ones_stay_unknown() -> None:
    outputs = ("trace.json.gz", "graphs/graph_0.json", "notes.md", "x.bin")
    assert output_kinds(outputs, ("op_table", "aten_graph", None, "from_the_future")) == (
        K.OP_TABLE,
        K.ATEN_GRAPH,
        None,
        None,
    )
    assert output_kinds(outputs) == (K.CHROME_TRACE, K.FX_GRAPH, None, None)


def test_status_entries_without_kind_still_validate() -> None:
    entry = OutputFile.model_validate({"path": "a.csv", "size": 1, "sha256": "0", "mtime_ns": 1})
    assert entry.kind is None


def test_analysis_job_selects_artefacts_by_kind(tmp_path: Path) -> None:
    job = AnalysisJob(
        tmp_path, "anything", "m", "ok", ("a/t.json.gz", "b.csv", "c.json.gz"), ("chrome_trace",)
    )  # kinds not parallel to the outputs: ignored, derived from the names instead
    assert job.artefacts(K.CHROME_TRACE) == [tmp_path / "a/t.json.gz", tmp_path / "c.json.gz"]
    recorded = AnalysisJob(
        tmp_path, "anything", "m", "ok", ("a/t.json.gz", "b.csv"), ("op_table", "chrome_trace")
    )
    assert recorded.artefact_names(K.CHROME_TRACE) == ["b.csv"]
    assert recorded.kinds == {K.OP_TABLE, K.CHROME_TRACE}
