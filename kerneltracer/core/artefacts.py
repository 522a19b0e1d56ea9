"""Artefact kinds: what a job's output file *is*, so consumers select on that, not on tracers.

A tracer declares which of its outputs is which kind (``Tracer.artefacts``, output pattern →
kind) and the worker records each output's kind in ``_TRACE_STATUS.json``. Analyses, coverage
and the report ask a job for its artefacts of a kind; a new tracer that writes a chrome trace
gets everything that reads chrome traces without naming it anywhere.

Status files written before kinds existed carry none: :func:`kind_from_name` derives the kind
from the output's path with the conventional file names below. Imports nothing heavy and no
tracer module.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from enum import StrEnum
from fnmatch import fnmatchcase
from functools import lru_cache


class ArtefactKind(StrEnum):
    CHROME_TRACE = "chrome_trace"  # a profiler (Kineto) chrome trace, .json or .json.gz
    KEY_AVERAGES = "key_averages"  # torch.profiler key_averages() as CSV (name x input shapes)
    OP_TABLE = "op_table"  # per op/kernel: name,kind,count,total_us,self_us,avg_us (CSV)
    PROFILER_TEXT = "profiler_text"  # a profiler's human-readable table
    DISPATCH_SIGNATURES = "dispatch_signatures"  # one JSON line per aten op call signature
    DISPATCH_SUMMARY = "dispatch_summary"  # per aten op: calls and distinct signatures (JSON)
    OP_COUNTS = "op_counts"  # per op: calls,signatures (CSV)
    TORCH_TRACE_LOG = "torch_trace_log"  # a TORCH_TRACE structured log (tlparse input)
    COMPILE_CODE = "compile_code"  # code a compiler generated (inductor output)
    COMPILE_SUMMARY = "compile_summary"  # graphs, breaks, recompiles, compile time (JSON)
    FX_GRAPH = "fx_graph"  # a torch-level FX graph's JSON node table
    ATEN_GRAPH = "aten_graph"  # an ATen-level FX graph's JSON node table
    GRAPH_TEXT = "graph_text"  # a graph's readable text
    GRAPH_INDEX = "graph_index"  # the index of a job's captured graphs (JSON)


# Output patterns -> kind, for Tracer.artefacts: fnmatch on the path relative to the job dir
# ("*" also crosses "/"); the first pattern that matches wins.
ArtefactPatterns = Mapping[str, ArtefactKind]

# File and directory names more than one tracer or consumer uses.
TORCH_TRACE_DIR = "torch_trace"  # TORCH_TRACE=<job dir>/torch_trace
GRAPHS_DIR = "graphs"
GRAPH_INDEX_FILE = f"{GRAPHS_DIR}/index.json"
COMPILE_SUMMARY_FILE = "compile_summary.json"
PROFILER_TRACE_FILE = "trace.json.gz"
KEY_AVERAGES_CSV = "key_averages.csv"
KEY_AVERAGES_TXT = "key_averages.txt"
OP_TABLE_FILE = "op_table.csv"
DISPATCH_OPS_FILE = "dispatch_ops.jsonl"
DISPATCH_SUMMARY_FILE = "dispatch_summary.json"
DISPATCH_COUNTS_FILE = "dispatch_op_counts.csv"


def compile_artefacts(code_dir: str) -> ArtefactPatterns:
    """What a compile tracer (torch_compile, vllm_compile) writes: its TORCH_TRACE logs, the
    generated code it copies into ``code_dir`` and its compile summary."""
    return {
        f"{TORCH_TRACE_DIR}/*.log": ArtefactKind.TORCH_TRACE_LOG,
        f"{code_dir}/*.py": ArtefactKind.COMPILE_CODE,
        COMPILE_SUMMARY_FILE: ArtefactKind.COMPILE_SUMMARY,
    }


# What a path means when its status file records no kind. A graph node table is an FX graph:
# whether its ops are torch- or ATen-level is known only to the tracer that wrote it.
_BY_NAME: ArtefactPatterns = {
    f"{TORCH_TRACE_DIR}/*.log": ArtefactKind.TORCH_TRACE_LOG,
    GRAPH_INDEX_FILE: ArtefactKind.GRAPH_INDEX,
    f"{GRAPHS_DIR}/graph_*.json": ArtefactKind.FX_GRAPH,
    f"{GRAPHS_DIR}/graph_*.txt": ArtefactKind.GRAPH_TEXT,
    GRAPHS_DIR: ArtefactKind.FX_GRAPH,  # a listed graphs/ directory (hand-written statuses)
    COMPILE_SUMMARY_FILE: ArtefactKind.COMPILE_SUMMARY,
    "*_code/*.py": ArtefactKind.COMPILE_CODE,
    DISPATCH_OPS_FILE: ArtefactKind.DISPATCH_SIGNATURES,
    DISPATCH_SUMMARY_FILE: ArtefactKind.DISPATCH_SUMMARY,
    DISPATCH_COUNTS_FILE: ArtefactKind.OP_COUNTS,
    KEY_AVERAGES_CSV: ArtefactKind.KEY_AVERAGES,
    KEY_AVERAGES_TXT: ArtefactKind.PROFILER_TEXT,
    "*profiler_out*.txt": ArtefactKind.PROFILER_TEXT,
    OP_TABLE_FILE: ArtefactKind.OP_TABLE,
    "*.json.gz": ArtefactKind.CHROME_TRACE,
    "*trace*.json": ArtefactKind.CHROME_TRACE,
}


def match_kind(path: str, patterns: ArtefactPatterns) -> ArtefactKind | None:
    """The kind of the first pattern ``path`` (relative, "/"-separated) matches, or None."""
    path = path.rstrip("/")
    # Case-insensitive like the profilers' own names (".JSON.GZ" from a copy on Windows).
    lowered = path.lower()
    return next((k for p, k in patterns.items() if fnmatchcase(lowered, p.lower())), None)


@lru_cache(maxsize=4096)
def kind_from_name(path: str) -> ArtefactKind | None:
    """The kind an output's conventional name implies (for status files without kinds).

    Cached: a run's thousands of jobs share a handful of output names.
    """
    return match_kind(path, _BY_NAME)


def output_kind(path: str, recorded: str | None) -> ArtefactKind | None:
    """The kind of one listed output: the recorded one, else derived from its name.

    A recorded kind this version does not know (a newer writer's) is unknown, not guessed.
    """
    if recorded is None:
        return kind_from_name(path)
    try:
        return ArtefactKind(recorded)
    except ValueError:
        return None


def output_kinds(
    outputs: Sequence[str], recorded: Sequence[str | None] = ()
) -> tuple[ArtefactKind | None, ...]:
    """The kind of every output; ``recorded`` is parallel to ``outputs`` or empty (none)."""
    if len(recorded) != len(outputs):
        recorded = (None,) * len(outputs)
    return tuple(output_kind(o, k) for o, k in zip(outputs, recorded, strict=True))


def select(
    outputs: Sequence[str], kinds: Sequence[ArtefactKind | None], wanted: Iterable[str]
) -> list[str]:
    """The outputs whose kind is one of ``wanted``, in listed order."""
    want = set(wanted)
    return [o for o, k in zip(outputs, kinds, strict=True) if k is not None and k in want]
