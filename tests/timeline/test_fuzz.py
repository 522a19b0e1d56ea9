"""Damaged real traces: the loader never crashes and counts every bad event by kind.

Each example takes a real HTA trace, breaks a few of its complete ('X') events in known
ways and checks that exactly those events are dropped and counted under the right kind;
a second property throws arbitrary JSON values into events and only asks for no crash
(a loaded trace or one TraceLoadError). The end-to-end tests pin the CLI's exit codes.
"""

from __future__ import annotations

import gzip
import json
import tempfile
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kerneltracer.analysis.timeline.analyses.attribution import REPEATED_CORRELATION, attribute
from kerneltracer.analysis.timeline.analyses.gpu_breakdown import (
    kernel_breakdown,
    select_gpu_work,
    temporal_breakdown,
)
from kerneltracer.analysis.timeline.analyses.op_table import op_table
from kerneltracer.analysis.timeline.load.loader import load_chrome_trace
from kerneltracer.errors import TraceLoadError
from tests.helpers import kt
from tests.timeline.traces import hta_path, kernel, write_trace, x

_SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# kind -> how to break one good complete event into exactly that kind of bad event
_BREAKS: dict[str, Any] = {
    "timestamp_not_a_number": lambda e: e.update(ts="abc"),
    "missing_timestamp": lambda e: e.pop("ts"),
    "duration_not_a_number": lambda e: e.update(dur=[1]),
    "missing_duration": lambda e: e.pop("dur"),
    "negative_duration": lambda e: e.update(dur=-5),
    "timestamp_out_of_range": lambda e: e.update(ts=1e300),
    "duration_out_of_range": lambda e: e.update(dur=1e308),
    "missing_name": lambda e: e.update(name=None),
    "name_not_a_string": lambda e: e.update(name={"a": 1}),
    "unknown_phase": lambda e: e.update(ph="Q"),
    "missing_phase": lambda e: e.pop("ph"),
    "thread_id_not_a_scalar": lambda e: e.update(pid=[1]),
    "not_an_object": None,  # the event is replaced by a number
}


@pytest.fixture(scope="module")
def real_doc(testdata_dir: Path) -> dict[str, Any]:
    path = hta_path(testdata_dir, "alexnet")
    doc: dict[str, Any] = orjson.loads(gzip.decompress(path.read_bytes()))
    return doc


def _load(doc: Any, gz: bool = False) -> Any:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ("t.json.gz" if gz else "t.json")
        data = json.dumps(doc).encode()  # not orjson: it refuses integers beyond 64 bits
        path.write_bytes(gzip.compress(data, 1) if gz else data)
        return load_chrome_trace(path)


def _good_complete(e: Any) -> bool:
    return (
        isinstance(e, dict)
        and e.get("ph") == "X"
        and type(e.get("ts")) in (int, float)
        and type(e.get("dur")) in (int, float)
        and e["dur"] >= 0
        and isinstance(e.get("name"), str)
    )


@_SETTINGS
@given(data=st.data())
def test_every_broken_event_is_counted_by_kind(real_doc: dict[str, Any], data: Any) -> None:
    base = _load(real_doc)
    events = [dict(e) if isinstance(e, dict) else e for e in real_doc["traceEvents"]]
    good = [i for i, e in enumerate(events) if _good_complete(e)]
    picks = data.draw(st.lists(st.sampled_from(good), min_size=1, max_size=8, unique=True))
    expected: dict[str, int] = dict(base.bad_events)
    for i in picks:
        kind = data.draw(st.sampled_from(sorted(_BREAKS)))
        if kind == "not_an_object":
            events[i] = data.draw(st.integers() | st.text(max_size=5) | st.none())
        else:
            _BREAKS[kind](events[i])
        expected[kind] = expected.get(kind, 0) + 1
    trace = _load({**real_doc, "traceEvents": events}, gz=data.draw(st.booleans()))
    assert trace.bad_events == expected
    assert len(trace) == len(base) - len(picks)


_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=6,
)
_FIELDS = ("ph", "ts", "dur", "name", "cat", "pid", "tid", "args")


@_SETTINGS
@given(data=st.data())
def test_arbitrary_field_values_never_crash(real_doc: dict[str, Any], data: Any) -> None:
    events = [dict(e) for e in real_doc["traceEvents"][:400] if isinstance(e, dict)]
    for _ in range(data.draw(st.integers(1, 20))):
        e = data.draw(st.sampled_from(events))
        e[data.draw(st.sampled_from(_FIELDS))] = data.draw(_json_values)
    try:
        trace = _load({"traceEvents": events})
    except TraceLoadError as exc:
        assert "no usable timed event" in str(exc)
        return
    # Every input event is used, skipped or counted bad (B/E pairs fold two into one).
    accounted = len(trace) + trace.bad_count + sum(trace.skipped_events.values())
    metadata = sum(1 for e in events if e.get("ph") in ("M", "B", "E"))
    assert len(events) - metadata <= accounted <= len(events)


def test_trace_of_only_bad_events_is_an_error_with_counts(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(
        json.dumps({"traceEvents": [{"ph": "X", "ts": "abc", "dur": -5, "name": None}]})
    )
    proc = kt("timeline", str(path), "-o", str(tmp_path / "out"))
    assert proc.returncode == 1, proc.stderr
    assert "no usable timed event" in proc.stderr
    assert "1 timestamp_not_a_number" in proc.stderr
    assert not (tmp_path / "out" / "bad" / "report.json").exists()


def test_bad_events_are_reported_and_strict_fails(tmp_path: Path, testdata_dir: Path) -> None:
    doc = orjson.loads(gzip.decompress(hta_path(testdata_dir, "alexnet").read_bytes()))
    doc["traceEvents"] += [
        {"ph": "X", "ts": 1, "dur": -5, "name": "neg"},
        {"ph": "Z", "ts": 1, "name": "odd"},
    ]
    path = tmp_path / "damaged.json"
    path.write_bytes(orjson.dumps(doc))
    proc = kt("timeline", "--no-inferscope", str(path), "-o", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    assert "2 malformed events (1 negative_duration, 1 unknown_phase) dropped" in proc.stderr
    report = json.loads((tmp_path / "out" / "damaged" / "report.json").read_text())
    assert report["source"]["bad_events"] == {"negative_duration": 1, "unknown_phase": 1}
    assert "Dropped 2 malformed events" in report["summary"]
    strict = kt("timeline", "--strict", str(path), "-o", str(tmp_path / "strict"))
    assert strict.returncode == 1
    assert "--strict: 2 bad events" in strict.stderr
    assert not (tmp_path / "strict" / "damaged").exists()


def test_tiny_trace_earns_no_confidence_and_no_zero_gain_advice(tmp_path: Path) -> None:
    event = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1}
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps({"traceEvents": [{**event, "ts": 10, "dur": 0}]}))
    proc = kt("timeline", str(path), "-o", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    report = json.loads((tmp_path / "out" / "tiny" / "report.json").read_text())
    verdict = report["analysis"]["bottleneck"]
    assert verdict["confidence"] == 0.0
    assert any("too little to be sure" in e for e in verdict["evidence"])
    assert all(r["impact"] != "Estimated improvement: up to 0%" for r in report["recommendations"])
    assert "up to 0%" not in report["summary"]


# A launch: (op start, op length, launch offset in the op, correlation id, kernel start after
# the launch, kernel length, memset?). Few ids, so several launches share one; ns fractions
# and sub-µs kernels, as on an H100 trace.
_launches = st.lists(
    st.tuples(
        st.floats(0, 5000),
        st.floats(1, 100),
        st.floats(0, 0.9),
        st.integers(0, 6),
        st.floats(-5, 500),
        st.floats(0, 40) | st.floats(0.1, 0.9),
        st.booleans(),
    ),
    min_size=1,
    max_size=25,
)
_ABSURD = st.sampled_from([("ts", 1e300), ("ts", -1e300), ("ts", 10**30), ("dur", 1e308)])


@_SETTINGS
@given(launches=_launches, absurd=st.lists(_ABSURD, max_size=3), steps=st.booleans())
def test_attribution_and_gpu_times_on_random_traces(
    launches: list[tuple[float, float, float, int, float, float, bool]],
    absurd: list[tuple[str, float]],
    steps: bool,
) -> None:
    """Issue 38's cases at random: repeated correlation ids, sub-µs events on ns timestamps,
    absurd times. Every GPU event lands in one ops row, a repeated id is counted and never
    linked to a launch after its kernel, absurd events are counted, no time is negative."""
    events: list[dict[str, Any]] = []
    if steps:
        events += [x("ProfilerStep#1", "user_annotation", 0, 2500)]
        events += [x("ProfilerStep#2", "user_annotation", 2500, 2600)]
    for op_ts, op_dur, at, corr, wait, dur, memset in launches:
        launch_ts = op_ts + at * op_dur
        events.append(x("aten::op", "cpu_op", op_ts, op_dur))
        events.append(x("cudaLaunchKernel", "cuda_runtime", launch_ts, 0.25, correlation=corr))
        gpu = kernel("Memset (Device)" if memset else "gemm", launch_ts + wait, dur, corr=corr)
        events.append(gpu | {"cat": "gpu_memset"} if memset else gpu)
    for field, value in absurd:
        events.append(x("aten::bad", "cpu_op", 1.5, 1) | {field: value})
    with tempfile.TemporaryDirectory() as tmp:
        trace = load_chrome_trace(write_trace(Path(tmp) / "t.json", events), op_args=True)
    kinds = {"ts": "timestamp_out_of_range", "dur": "duration_out_of_range"}
    expected_bad: dict[str, int] = {}
    for field, _ in absurd:
        expected_bad[kinds[field]] = expected_bad.get(kinds[field], 0) + 1
    assert trace.bad_events == expected_bad

    a = attribute(trace)
    table = op_table(a, None)
    assert sum(r.gpu_events for r in table.rows) == a.rows.size == len(launches)
    assert sum(r.gpu_time_us for r in table.rows) == pytest.approx(a.total_us)
    shared = {c for c in {lc[3] for lc in launches} if sum(lc[3] == c for lc in launches) > 1}
    expected = sum(lc[3] in shared for lc in launches)
    assert a.repeated_correlation()["gpu_events"] == expected
    by_time = a.method == REPEATED_CORRELATION
    assert (trace.ts[a.launch[by_time]] <= trace.ts[a.rows[by_time]]).all()
    for r in table.rows:
        q = r.record()["mean_queue_delay_us"]
        assert q is None or q >= 0

    work = select_gpu_work(trace)
    tb = temporal_breakdown(work)
    if work.ts.size == 0:  # every launch in the last ProfilerStep, which HTA's selection drops
        assert steps and tb is None
        return
    assert tb is not None
    for value in (tb.idle_us, tb.compute_us, tb.non_compute_us, tb.busy_us, tb.kernel_time_us):
        assert value >= 0
    assert tb.idle_us + tb.busy_us == pytest.approx(tb.kernel_time_us)
    kb = kernel_breakdown(work, trace.names)
    assert all(row["sum_us"] >= 0 for row in kb.by_type)
    for stats in kb.top_kernels.values():
        assert all(st_.min_us >= 0 and st_.sum_us >= 0 for st_ in stats)
