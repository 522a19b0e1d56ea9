"""Per compile id: what one frame compile did, read from a stage-1 intermediate.

The intermediate is what ``kerneltracer logs parse`` writes (``by_type/<envelope>.jsonl``
with payloads inlined, ``by_type/chromium_events.json``); nothing here reads a log itself.
Times come from ``compilation_metrics``' cumulative fields (the ``*_s`` fields tlparse shows,
else the ``*_us`` fields newer torch writes) and autotuning from the chromium spans.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from kerneltracer.analysis.compile_health.breaks import (
    BreakReason,
    function_frame,
    parse_break,
    recompile_reason_lines,
)

PHASES = ("dynamo", "aot_autograd", "inductor", "codegen", "autotune")
CACHE_KINDS = ("hit", "miss", "bypass")
KERNEL_KINDS = ("cpp", "triton", "extern", "fallback")

_CACHE_ARTIFACT = re.compile(r"^(fx_graph|aotautograd)_cache_(hit|miss|bypass)$")
_CPP = re.compile(r"^(cpp_fused_\w+)\s*=\s*async_compile\.cpp", re.MULTILINE)
_TRITON = re.compile(r"^(triton_\w+)\s*=\s*async_compile\.triton\(", re.MULTILINE)
_EXTERN = re.compile(r"\bextern_kernels\.(\w+)\(")
_FALLBACK = re.compile(r"\btorch\.ops\.(\w+)\.(\w+)\.(\w+)\(")
_AUTOTUNE = re.compile(r"autotun|benchmark", re.IGNORECASE)
_CHROMIUM_ID = re.compile(r"^(?:!(\d+)/)?(\d+)/(\d+)(?:_(\d+))?$")
_PIECEWISE_ARTIFACT = "vllm_piecewise_compile_start"
# The texts a compile id's view links to, by the envelope that carries each (tlparse's
# compile directory shows the same artefacts).
_TEXT_KINDS = {
    "dynamo_output_graph": "graph",
    "dynamo_cpp_guards_str": "guards",
    "dynamo_guards": "guards",
    "inductor_output_code": "output_code",
}
MAX_TEXT_BYTES = 64 * 1024  # of one text; the rest is in `kerneltracer logs LOG`'s output


@dataclass
class TextBudget:
    """How many bytes of graph, guard and code texts a fleet's read may still keep: a
    bound on memory whatever the number of logs (texts past it are counted, not kept)."""

    left: int = 32 * 1024 * 1024
    dropped: int = 0  # texts not kept

    def take(self, text: str) -> str | None:
        if len(text) > MAX_TEXT_BYTES:
            text = (
                text[:MAX_TEXT_BYTES]
                + f"\n\n# … cut at {MAX_TEXT_BYTES // 1024} KiB of {len(text):,} characters:"
                " `kerneltracer logs LOG -o OUT` writes it whole\n"
            )
        if len(text) > self.left:
            self.dropped += 1
            return None
        self.left -= len(text)
        return text


@dataclass
class CompileRecord:
    """One compile id of one log (display form ``[0/1]``)."""

    compile_id: str
    frame_id: int | None
    frame_compile_id: int | None
    attempt: int | None
    co_name: str | None = None
    co_filename: str | None = None
    co_firstlineno: int | None = None
    fail_type: str | None = None
    fail_reason: str | None = None
    fail_frame: str | None = None
    restart_reasons: list[str] = field(default_factory=list)
    breaks: list[BreakReason] = field(default_factory=list)
    recompile_reasons: list[str] = field(default_factory=list)
    graphs: int = 0
    guard_count: int = 0
    shape_env_guard_count: int = 0
    graph_op_count: int = 0
    dynamic_symbols: int = 0
    specializations: int = 0
    guards_added: int = 0
    cache: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CACHE_KINDS, 0))
    kernels: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KERNEL_KINDS, 0))
    piecewise_compiles: int = 0
    # Raw cumulative times (s) as compilation_metrics gives them; None when absent.
    entire_frame_s: float | None = None
    backend_s: float | None = None
    inductor_s: float | None = None
    code_gen_s: float | None = None
    dynamo_before_restart_s: float | None = None
    backward_inductor_s: float | None = None
    backward_code_gen_s: float | None = None
    time_source: str | None = None  # "s" (tlparse's fields), "us" (newer torch), None
    autotune_metric_s: float = 0.0  # compilation_metrics' compile_time_autotune_time_us
    autotune_span_s: float = 0.0  # the chromium autotuning / benchmark spans
    has_metrics: bool = False
    metrics_entries: int = 0
    restarts_are_breaks: bool = False  # set for every record of a log without break artifacts
    # Graph, guards and output code (_TEXT_KINDS), as far as the read's TextBudget allows.
    texts: dict[str, str] = field(default_factory=dict)

    @property
    def autotune_s(self) -> float:
        # Two views of the same work: never add them.
        return max(self.autotune_metric_s, self.autotune_span_s)

    @property
    def is_recompile(self) -> bool:
        return bool(self.frame_compile_id)

    @property
    def failed(self) -> bool:
        return self.fail_type is not None

    def phase_times(self) -> dict[str, float]:
        """Seconds per phase: each cumulative field minus the one nested inside it.

        Autotuning runs inside Inductor's time; it is shown beside, not subtracted.
        """
        total = self.entire_frame_s or 0.0
        backend = self.backend_s or 0.0
        inductor = (self.inductor_s or 0.0) + (self.backward_inductor_s or 0.0)
        codegen = (self.code_gen_s or 0.0) + (self.backward_code_gen_s or 0.0)
        return {
            "dynamo": max(total - backend, 0.0),
            "aot_autograd": max(backend - (self.inductor_s or 0.0), 0.0),
            "inductor": max(inductor - codegen, 0.0),
            "codegen": codegen,
            "autotune": self.autotune_s,
        }

    @property
    def total_s(self) -> float:
        return (self.entire_frame_s or 0.0) + (self.backward_inductor_s or 0.0)


def read_intermediate(inter: Path, budget: TextBudget | None = None) -> list[CompileRecord]:
    """The compile records of one single-rank intermediate directory, in first-seen order;
    with a ``budget``, each keeps its graph, guard and output code texts within it."""
    records: dict[str, CompileRecord] = {}
    # Every compile id any envelope named, in first-seen order, even one with nothing
    # this module reads (a frame whose compile only started).
    try:
        manifest = orjson.loads((inter / "manifest.json").read_bytes())
        seen = manifest.get("compile_id_display") or {}
    except (OSError, orjson.JSONDecodeError):
        seen = {}
    for display in seen.values():
        if isinstance(display, str) and display != "[-/-]":
            records[display] = _new_record(display)

    def rec(entry: dict[str, Any]) -> CompileRecord | None:
        # Work outside any compile id ("[-/-]": vLLM's compiles for each size at run time)
        # is kept under that id: its kernels and piecewise compiles count.
        key = entry.get("display_id")
        if not isinstance(key, str):
            return None
        found = records.get(key)
        if found is None:
            found = records[key] = _new_record(key)
        return found

    for etype, handler in _HANDLERS.items():
        for entry in _iter_type(inter, etype):
            r = rec(entry)
            if r is not None:
                handler(r, entry)
    _add_autotune(inter, records)
    if budget is not None:
        _add_texts(inter, records, budget)
    if not any(r.breaks for r in records.values()):
        for r in records.values():
            r.restarts_are_breaks = True
    return list(records.values())


def _new_record(display: str) -> CompileRecord:
    m = _CHROMIUM_ID.match(display.strip("[]"))
    if m is None:
        return CompileRecord(display, None, None, None)
    return CompileRecord(display, int(m.group(2)), int(m.group(3)), int(m.group(4) or 0))


def _iter_type(inter: Path, etype: str) -> Iterator[dict[str, Any]]:
    path = inter / "by_type" / f"{etype}.jsonl"
    if not path.is_file():
        return
    with open(path, "rb") as fh:
        for line in fh:
            yield orjson.loads(line)


def _meta(entry: dict[str, Any]) -> dict[str, Any]:
    meta = entry.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _num(meta: dict[str, Any], s_key: str, us_key: str | None) -> tuple[float | None, str | None]:
    v = meta.get(s_key)
    if isinstance(v, int | float) and not isinstance(v, bool):
        return float(v), "s"
    if us_key is not None:
        u = meta.get(us_key)
        if isinstance(u, int | float) and not isinstance(u, bool):
            return u / 1e6, "us"
    return None, None


_TIME_FIELDS = (
    ("backend_s", "backend_compile_time_s", "aot_autograd_cumulative_compile_time_us"),
    ("inductor_s", "inductor_compile_time_s", "inductor_cumulative_compile_time_us"),
    ("code_gen_s", "code_gen_time_s", "inductor_code_gen_cumulative_compile_time_us"),
    (
        "dynamo_before_restart_s",
        "dynamo_time_before_restart_s",
        "dynamo_compile_time_before_restart_us",
    ),
)


def _add(a: float | None, b: float | None) -> float | None:
    return a if b is None else (b if a is None else a + b)


def _int(meta: dict[str, Any], key: str) -> int:
    v = meta.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def _on_metrics(r: CompileRecord, entry: dict[str, Any]) -> None:
    meta = _meta(entry)
    r.has_metrics = True
    for attr in ("co_name", "co_filename"):
        if isinstance(meta.get(attr), str):
            setattr(r, attr, meta[attr])
    if isinstance(meta.get("co_firstlineno"), int):
        r.co_firstlineno = meta["co_firstlineno"]
    r.guard_count += _int(meta, "guard_count")
    r.shape_env_guard_count += _int(meta, "shape_env_guard_count")
    r.graph_op_count += _int(meta, "graph_op_count")
    # A compile id can carry several metrics envelopes (a reset between runs of one
    # process compiles [0/0] again): its times are their sums.
    total, src = _num(meta, "entire_frame_compile_time_s", "dynamo_cumulative_compile_time_us")
    r.entire_frame_s = _add(r.entire_frame_s, total)
    for attr, s_key, us_key in _TIME_FIELDS:
        setattr(r, attr, _add(getattr(r, attr), _num(meta, s_key, us_key)[0]))
    if src is not None and r.time_source != "s":
        r.time_source = src
    r.metrics_entries += 1
    autotune, _ = _num(meta, "compile_time_autotune_time_s", "compile_time_autotune_time_us")
    r.autotune_metric_s += autotune or 0.0
    if meta.get("fail_type") is not None:
        r.fail_type = str(meta["fail_type"])
        r.fail_reason = None if meta.get("fail_reason") is None else str(meta["fail_reason"])
        r.fail_frame = function_frame(
            meta.get("fail_user_frame_filename"), meta.get("fail_user_frame_lineno"), None
        )
    reasons = meta.get("restart_reasons")
    if isinstance(reasons, list):
        r.restart_reasons.extend(str(x) for x in reasons)
    reason = meta.get("recompile_reason")
    if isinstance(reason, str) and reason and not r.recompile_reasons:
        r.recompile_reasons.extend(recompile_reason_lines(reason))


def _on_bwd_metrics(r: CompileRecord, entry: dict[str, Any]) -> None:
    meta = _meta(entry)
    v, _ = _num(meta, "inductor_compile_time_s", None)
    c, _ = _num(meta, "code_gen_time_s", None)
    r.backward_inductor_s = (r.backward_inductor_s or 0.0) + (v or 0.0)
    r.backward_code_gen_s = (r.backward_code_gen_s or 0.0) + (c or 0.0)
    if meta.get("fail_type") is not None and r.fail_type is None:
        r.fail_type = str(meta["fail_type"])
        r.fail_reason = None if meta.get("fail_reason") is None else str(meta["fail_reason"])


def _on_artifact(r: CompileRecord, entry: dict[str, Any]) -> None:
    name = str(_meta(entry).get("name"))
    payload = entry.get("payload")
    if name == "dynamo_graph_break_reason":
        r.breaks.append(parse_break(payload if isinstance(payload, str) else ""))
    elif name == _PIECEWISE_ARTIFACT:
        # vLLM compiles each piecewise submodule once per size under one Dynamo compile:
        # tagged, never counted as recompiles.
        r.piecewise_compiles += 1
    elif name == "recompile_reasons":
        lines = recompile_reason_lines(payload if isinstance(payload, str) else None)
        r.recompile_reasons = lines or r.recompile_reasons
    else:
        m = _CACHE_ARTIFACT.match(name)
        if m:
            r.cache[m.group(2)] += 1


def _on_output_code(r: CompileRecord, entry: dict[str, Any]) -> None:
    code = entry.get("payload")
    if not isinstance(code, str):
        return
    r.kernels["cpp"] += len(set(_CPP.findall(code)))
    r.kernels["triton"] += len(set(_TRITON.findall(code)))
    r.kernels["extern"] += len(_EXTERN.findall(code))
    r.kernels["fallback"] += len(_FALLBACK.findall(code))


def _on_graph(r: CompileRecord, entry: dict[str, Any]) -> None:
    r.graphs += 1


def _on_symbol(r: CompileRecord, entry: dict[str, Any]) -> None:
    r.dynamic_symbols += 1


def _on_specialization(r: CompileRecord, entry: dict[str, Any]) -> None:
    r.specializations += 1


def _on_guard_added(r: CompileRecord, entry: dict[str, Any]) -> None:
    r.guards_added += 1


_HANDLERS = {
    "compilation_metrics": _on_metrics,
    "bwd_compilation_metrics": _on_bwd_metrics,
    "aot_autograd_backward_compilation_metrics": _on_bwd_metrics,
    "artifact": _on_artifact,
    "inductor_output_code": _on_output_code,
    "dynamo_output_graph": _on_graph,
    "create_symbol": _on_symbol,
    "symbolic_shape_specialization": _on_specialization,
    "guard_added_fast": _on_guard_added,
}


def _add_texts(inter: Path, records: dict[str, CompileRecord], budget: TextBudget) -> None:
    """Each record's texts; several of one kind (a forward's and a backward's code) are
    kept one after the other."""
    for etype, kind in _TEXT_KINDS.items():
        for entry in _iter_type(inter, etype):
            key = entry.get("display_id")
            r = records.get(key) if isinstance(key, str) else None
            payload = entry.get("payload")
            if r is None or payload is None:
                continue
            text = (
                payload
                if isinstance(payload, str)
                else orjson.dumps(payload, option=orjson.OPT_INDENT_2).decode()
            )
            before = r.texts.get(kind)
            kept = budget.take(text if before is None else f"\n\n# ---- next {kind} ----\n\n{text}")
            if kept is not None:
                r.texts[kind] = kept if before is None else before + kept


def _add_autotune(inter: Path, records: dict[str, CompileRecord]) -> None:
    """Seconds of the outermost autotuning/benchmark spans, per compile id."""
    open_spans: dict[tuple[Any, Any, str], list[float]] = {}
    depth: dict[tuple[Any, Any], int] = {}
    for ev in _chromium_events(inter / "by_type" / "chromium_events.json"):
        if not _AUTOTUNE.search(str(ev.get("name", ""))):
            continue
        ts = ev.get("ts")
        if not isinstance(ts, int | float):
            continue
        lane = (ev.get("pid"), ev.get("tid"))
        key = (*lane, str(ev.get("name")))
        args = ev.get("args") if isinstance(ev.get("args"), dict) else {}
        cid = args.get("compile_id") if isinstance(args, dict) else None
        if ev.get("ph") == "B":
            open_spans.setdefault(key, []).append(float(ts))
            depth[lane] = depth.get(lane, 0) + 1
        elif ev.get("ph") == "E" and open_spans.get(key):
            start = open_spans[key].pop()
            depth[lane] -= 1
            if depth[lane] == 0 and isinstance(cid, str):
                r = records.get(f"[{cid}]")
                if r is not None:
                    r.autotune_span_s += (float(ts) - start) / 1e6
        elif ev.get("ph") == "X" and isinstance(cid, str) and depth.get(lane, 0) == 0:
            r = records.get(f"[{cid}]")
            dur = ev.get("dur")
            if r is not None and isinstance(dur, int | float):
                r.autotune_span_s += float(dur) / 1e6


def _chromium_events(path: Path) -> Iterator[dict[str, Any]]:
    """The events of stage 1's ``chromium_events.json``, one per line (the array is
    written one event a line), so a long trace is never held whole."""
    if not path.is_file():
        return
    with open(path, "rb") as fh:
        for line in fh:
            low = line.lower()
            if b"autotun" not in low and b"benchmark" not in low:
                continue  # the only spans read here; most events are skipped unparsed
            try:
                ev = orjson.loads(line.strip().rstrip(b","))
            except orjson.JSONDecodeError:
                continue
            if isinstance(ev, dict):
                yield ev
