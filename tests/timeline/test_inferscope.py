"""InferScope conversion, its JSON Schema, the constraint validator and the index."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from kerneltracer.analysis.timeline.load.loader import load_chrome_trace
from kerneltracer.analysis.timeline.model.index import TraceIndex
from kerneltracer.analysis.timeline.model.schema import SCHEMA_PATH, json_schema, parse_inferscope
from kerneltracer.analysis.timeline.model.validate import validate
from kerneltracer.analysis.timeline.render.convert import to_inferscope
from kerneltracer.errors import UsageError
from tests.timeline.traces import hta_path, kernel, memcpy, write_trace, x

SMALL = [
    "amd",
    "alexnet",
    "event_sync",
    "cpu_only",
    "legacy",
    "triton",
    "call_stack",
    "compare_base",
]


def test_checked_in_schema_matches_the_models() -> None:
    assert json.loads(SCHEMA_PATH.read_text()) == json_schema()


@pytest.mark.parametrize("key", SMALL)
def test_converted_real_traces_follow_the_schema(testdata_dir: Path, key: str) -> None:
    doc = to_inferscope(load_chrome_trace(hta_path(testdata_dir, key)))
    jsonschema.validate(doc, json_schema())
    parse_inferscope(doc)
    ids = [e["id"] for e in doc["events"]] + [s["id"] for s in doc["relationships"]["scopes"]]
    assert len(ids) == len(set(ids))
    starts = [e.get("timestamp_start_us", e.get("timestamp_us")) for e in doc["events"]]
    assert starts == sorted(starts)


def test_alexnet_mapping(testdata_dir: Path) -> None:
    trace = load_chrome_trace(hta_path(testdata_dir, "alexnet"))
    doc = to_inferscope(trace)
    by_type: dict[str, list[dict[str, Any]]] = {}
    for e in doc["events"]:
        by_type.setdefault(e["type"], []).append(e)
    htod = sum(
        1
        for n in trace.name[trace.category_mask({"gpu_memcpy"})].tolist()
        if "HtoD" in trace.names[n]
    )
    assert len(by_type["h2d_copy"]) == htod == 16
    copy = by_type["h2d_copy"][0]["metadata"]
    assert copy["bytes"] > 0 and copy["throughput_gbps"] > 0 and copy["kind"] == "pageable"
    kernels = [e for e in by_type["gpu_kernel"] if e["metadata"]["operation"] == "kernel"]
    assert len(kernels) == 79
    meta = kernels[0]["metadata"]
    assert len(meta["grid_dim"]) == 3 and len(meta["block_dim"]) == 3 and meta["stream_id"] == 7
    assert by_type["cpu_call"][0]["wall_clock_start"].startswith("2023-09-27T")
    assert len(doc["relationships"]["launches"]) >= 79
    assert doc["trace_metadata"]["gpu_model"] == "NVIDIA A100-PG509-200"


def test_scopes_link_parents_and_children(tmp_path: Path) -> None:
    events = [
        x("ProfilerStep#1", "user_annotation", 0, 100),
        x("forward", "user_annotation", 10, 50),
        x("aten::linear", "cpu_op", 12, 30),
        x("aten::addmm", "cpu_op", 15, 20),
        x("ProfilerStep#2", "user_annotation", 100, 50),
    ]
    doc = to_inferscope(load_chrome_trace(write_trace(tmp_path / "s.json", events)))
    scopes = {s["name"]: s for s in doc["relationships"]["scopes"]}
    assert scopes["forward"]["parent_id"] == scopes["ProfilerStep#1"]["id"]
    assert scopes["ProfilerStep#1"]["child_ids"] == [scopes["forward"]["id"]]
    assert scopes["ProfilerStep#2"]["parent_id"] is None
    calls = {e["name"]: e["metadata"] for e in doc["events"] if e["type"] == "cpu_call"}
    assert calls["aten::linear"]["call_depth"] == 0 and calls["aten::addmm"]["call_depth"] == 1
    assert calls["aten::addmm"]["parent_scope"] == "forward"
    assert validate(doc).ok


def test_memory_and_instant_events(tmp_path: Path) -> None:
    events = [
        {
            "ph": "i",
            "s": "t",
            "cat": "cpu_instant_event",
            "name": "[memory]",
            "pid": 1,
            "tid": 1,
            "ts": 5,
            "args": {"Bytes": -512, "Addr": 1234, "Device Type": 0, "Total Allocated": 0},
        },
        {"ph": "i", "s": "g", "name": "marker", "pid": 1, "tid": 1, "ts": 6, "args": {"tokens": 3}},
        x("aten::empty", "cpu_op", 0, 10),
    ]
    doc = to_inferscope(load_chrome_trace(write_trace(tmp_path / "m.json", events)))
    mem = next(e for e in doc["events"] if e["type"] == "memory_event")
    assert mem["metadata"]["operation"] == "free" and mem["metadata"]["bytes"] == 512
    marker = next(e for e in doc["events"] if e["name"] == "marker")
    assert marker["type"] == "instant" and marker["metadata"]["user_metadata"] == {"tokens": 3}


def test_validator_lists_each_violation(tmp_path: Path) -> None:
    events = [
        kernel("a", 0, 10),
        kernel("b", 5, 10),  # overlap on stream 7
        kernel("c", 100, 10, stream=8),
        memcpy("HtoD", 105, 3, stream=9),  # other streams: fine
        x("zero", "cpu_op", 50, 0),
        x("outer", "user_annotation", 0, 100),
        x("crossing", "user_annotation", 90, 50),
    ]
    doc = to_inferscope(load_chrome_trace(write_trace(tmp_path / "v.json", events)))
    doc["events"].append(next(e for e in doc["events"] if e["name"] == "zero"))  # duplicate id
    doc["events"].append(
        {
            "id": "bad",
            "type": "cpu_call",
            "name": "backwards",
            "timestamp_start_us": 10.0,
            "timestamp_end_us": 5.0,
            "metadata": {},
        }
    )
    report = validate(doc)
    assert report.counts == {
        "stream_overlap": 1,
        "zero_duration": 2,
        "scope_containment": 1,
        "unique_id": 1,
        "timestamp_order": 1,
    }
    assert not report.ok
    overlap = next(v for v in report.violations if v.constraint == "stream_overlap")
    assert "overlaps the previous op by 5.000 µs" in overlap.detail


def _overlaps_as_sorted_tuples(events: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    """The stream-overlap pairs as the validator found them when it sorted (start, end, id)
    tuples per stream: the reference its columns must agree with, ties included."""
    lanes: dict[Any, list[tuple[float, float, str]]] = {}
    for e in events:
        meta = e["metadata"]
        key = (meta["device_id"], meta["stream_id"])
        lanes.setdefault(key, []).append((e["timestamp_start_us"], e["timestamp_end_us"], e["id"]))
    pairs = []
    for spans in lanes.values():
        prev_end, prev_id = float("-inf"), ""
        for start, end, eid in sorted(spans):
            if start < prev_end:
                pairs.append((prev_id, eid))
            if end > prev_end:
                prev_end, prev_id = end, eid
    return pairs


def test_stream_overlaps_pair_the_ops_the_sorted_spans_pair() -> None:
    """Seeded streams with many equal starts, ends and whole spans (ids compared as text:
    e10 before e9), and ids of other forms."""
    import random

    rng = random.Random(3)
    odd_ids = ["x", "e", "e07", "e-1", "e١", "k9"]  # not the converter's e<k>: kept as text
    for _ in range(30):
        events = []
        for k in range(rng.randrange(1, 60)):
            start = float(rng.randrange(0, 20))
            events.append(
                {
                    "id": rng.choice([f"e{k}", f"e{k}", f"e{rng.randrange(200)}", *odd_ids]),
                    "type": rng.choice(["gpu_kernel", "h2d_copy"]),
                    "name": "k",
                    "timestamp_start_us": start,
                    "timestamp_end_us": start + rng.randrange(0, 6),
                    "metadata": {"device_id": 0, "stream_id": rng.randrange(2)},
                }
            )
        report = validate({"events": events, "scopes": []})
        found = [v.ids for v in report.violations if v.constraint == "stream_overlap"]
        expected = _overlaps_as_sorted_tuples(events)
        assert report.counts.get("stream_overlap", 0) == len(expected)
        assert found == expected[: len(found)]  # the first ones listed, in order


def test_violations_in_real_traces_are_listed_not_fatal(testdata_dir: Path) -> None:
    doc = to_inferscope(load_chrome_trace(hta_path(testdata_dir, "rank0_16")))
    report = validate(doc).to_dict()
    assert report["counts"]["stream_overlap"] == 1
    assert report["counts"]["zero_duration"] > 1000
    assert any(v["constraint"] == "stream_overlap" for v in report["violations"])
    assert report["listed"] < sum(report["counts"].values())  # listing is capped, counts are not


def test_index_by_type_time_range_and_scope(tmp_path: Path) -> None:
    events = [
        x("ProfilerStep#1", "user_annotation", 0, 10_000),
        x("cudaMemcpyAsync", "cuda_runtime", 100, 50, correlation=1),
        memcpy("HtoD", 200, 500),
        kernel("k1", 12_000, 1_000),
        kernel("k2", 30_000, 30_000),
        kernel("k3", 60_000, 10),
        x("ProfilerStep#2", "user_annotation", 10_000, 80_000),
    ]
    idx = TraceIndex(to_inferscope(load_chrome_trace(write_trace(tmp_path / "i.json", events))))
    assert (
        idx.count("gpu_kernel") == 3 and idx.count("h2d_copy") == 1 and idx.count("d2h_copy") == 0
    )
    # "All GPU kernels between 10-50 ms" (k2 starts inside, k3 after, k1 before 10 ms? no: 12 ms)
    assert [e["name"] for e in idx.between(10_000, 50_000, types={"gpu_kernel"})] == ["k1", "k2"]
    assert [e["name"] for e in idx.between(55_000, 59_000)] == ["k2"]  # overlap, not just start
    assert [e["name"] for e in idx.in_scope("ProfilerStep#1")] == [
        "cudaMemcpyAsync",
        "Memcpy HtoD (Pageable -> Device)",
    ]
    assert {e["name"] for e in idx.in_scope("ProfilerStep#2", types={"gpu_kernel"})} == {
        "k1",
        "k2",
        "k3",
    }
    with pytest.raises(UsageError, match="valid: cpu_call"):
        idx.count("kernel")
    with pytest.raises(UsageError, match="no scope"):
        idx.in_scope("nope")


def test_streamed_file_equals_the_in_memory_document(testdata_dir: Path, tmp_path: Path) -> None:
    import gzip
    from datetime import UTC, datetime

    from kerneltracer.analysis.timeline.render.inferscope_file import write_inferscope

    trace = load_chrome_trace(hta_path(testdata_dir, "nccl"))
    created = datetime(2026, 1, 2, tzinfo=UTC)
    path = tmp_path / "t.json.gz"
    # Many chunks, so that the seams are exercised.
    report = write_inferscope(trace, path, created, chunk_size=1000)
    doc = to_inferscope(trace, created)
    assert json.loads(gzip.decompress(path.read_bytes())) == json.loads(json.dumps(doc))
    assert report.to_dict() == validate(doc).to_dict()
    assert report.checked_events == len(doc["events"]) > 20_000
    assert not list(tmp_path.glob(".*.tmp"))


def test_streamed_file_without_wall_clock_and_with_violations(tmp_path: Path) -> None:
    """Relative timestamps (no wall clock), odd names, violations: the formatted text and
    the column checks agree with the dicts and the dict checks."""
    events = [
        x("outer", "user_annotation", 0, 100),
        x('quote " back\\slash \u00e9 \n', "cpu_op", 1, 20, correlation=7),
        x("zero", "cpu_op", 50, 0),
        x("child", "python_function", 2.5, 0.125, tid=2),
        kernel("a", 0, 10),
        kernel("b", 5, 10),
        x("crossing", "user_annotation", 90, 50),
    ]
    trace = load_chrome_trace(write_trace(tmp_path / "w.json", events))
    written, doc, report = _streamed_in_chunks_of_8(trace, tmp_path / "w.json.gz")
    assert written == json.loads(json.dumps(doc))
    assert all(e.get("wall_clock_start", None) is None for e in written["events"])
    assert report.to_dict() == validate(doc).to_dict()
    assert report.counts["zero_duration"] == 1 and report.counts["stream_overlap"] == 1


@pytest.mark.parametrize("key", ["rank_unavailable", "distributed_info_unavailable"])
def test_streamed_file_of_a_trace_with_host_only_chunks(
    testdata_dir: Path, tmp_path: Path, key: str
) -> None:
    """A wall clock and a chunk with no event but host calls (these traces' last): its
    empty column of other events' times once failed the writer."""
    import gzip
    from datetime import UTC, datetime

    from kerneltracer.analysis.timeline.render.inferscope_file import write_inferscope

    trace = load_chrome_trace(hta_path(testdata_dir, key))
    created = datetime(2026, 1, 2, tzinfo=UTC)
    path = tmp_path / "t.json.gz"
    report = write_inferscope(trace, path, created)
    doc = to_inferscope(trace, created)
    assert json.loads(gzip.decompress(path.read_bytes())) == json.loads(json.dumps(doc))
    assert report.to_dict() == validate(doc).to_dict()


def test_streamed_gpu_ops_with_wall_clock_equal_the_dicts(tmp_path: Path) -> None:
    """Kernels, memsets and every kind of copy, written column-wise, in chunks of only GPU
    ops, only host calls and both: the same events and checks as the dicts."""
    gpu = [
        kernel("k1", 0, 10, corr=3, grid=[1, 2, 3], **{"est. achieved occupancy %": 50}),
        kernel("k2", 5, 10),
        memcpy("HtoD", 20, 4),
        memcpy("DtoH", 30, 0),
        memcpy("DtoD", 40, 2),
        x("Memcpy weird", "gpu_memcpy", 50, 1, tid=7, pid=0, stream=7, device=0),
        x("Memset (Device)", "gpu_memset", 60, 1, tid=7, pid=0, stream=7, device=0, bytes=8),
        kernel("no stream", 70, 1, stream=-1),
    ]
    host = [x(f"op{i}", "cpu_op", 100 + i, 0.5) for i in range(12)]
    mixed = [x("launch", "cuda_runtime", 200, 1, correlation=3), kernel("k3", 201, 1)]
    meta = {"baseTimeNanoseconds": 1_700_000_000_000_000_000}
    trace = load_chrome_trace(write_trace(tmp_path / "g.json", gpu + host + mixed, **meta))
    written, doc, report = _streamed_in_chunks_of_8(trace, tmp_path / "g.json.gz")
    assert written == json.loads(json.dumps(doc))
    assert all(e["wall_clock_start"].startswith("2023-") for e in written["events"])
    assert {e["type"] for e in written["events"]} >= {"gpu_kernel", "h2d_copy", "d2h_copy"}
    assert report.to_dict() == validate(doc).to_dict()
    assert report.counts["stream_overlap"] == 1


def test_streamed_events_of_every_kind_interleaved_equal_the_dicts(tmp_path: Path) -> None:
    """Instants, memory events, syncs and GPU annotations (the per-event dicts' path)
    between host calls and overlapping kernels, in every chunk: each text lands at its
    event's place, and the kernels' lanes (checked for overlap) come out whole."""
    instant = {"ph": "i", "s": "t", "pid": 1, "tid": 1}
    events: list[dict[str, Any]] = []
    for i in range(6):
        t = 100.0 * i
        events += [
            x(f"op{i}", "cpu_op", t, 5),
            {**instant, "name": f"mark{i}", "cat": "cpu_instant_event", "ts": t + 1},
            kernel(f"k{i}", t + 2, 10, corr=i),
            {
                **instant,
                "name": "[memory]",
                "cat": "cpu_instant_event",
                "ts": t + 3,
                "args": {"Bytes": 512 - 1024 * (i % 2), "Addr": 7},
            },
            kernel(f"over{i}", t + 4, 10),  # overlaps k<i> on the same stream
            x("cudaDeviceSynchronize", "cuda_sync", t + 6, 1, tid=7, pid=0, stream=7),
            x(f"ann{i}", "gpu_user_annotation", t + 2, 12, tid=7, pid=0, stream=7, device=0),
            x(f"launch{i}", "cuda_runtime", t + 7, 1, correlation=i),
        ]
    trace = load_chrome_trace(write_trace(tmp_path / "k.json", events))
    written, doc, report = _streamed_in_chunks_of_8(trace, tmp_path / "k.json.gz")
    assert written == json.loads(json.dumps(doc))
    kinds = {e["type"] for e in written["events"]}
    assert kinds >= {"cpu_call", "gpu_kernel", "instant", "memory_event"}
    assert report.to_dict() == validate(doc).to_dict()
    assert report.counts["stream_overlap"] == 6


def test_lane_columns_joined_in_event_order_feed_the_streams_in_first_seen_order() -> None:
    """Lanes of GPU ops and of the per-event path, joined by event number, reach the checks
    as their events come: streams listed in the order they first run an op, each stream's
    spans in event order, device -1 read as none."""
    import numpy as np

    from kerneltracer.analysis.timeline.model.validate import (
        EventColumns,
        LaneColumns,
        Validator,
    )

    def lanes(rows: list[tuple[int, int, float, float, int]]) -> LaneColumns:
        cols = list(zip(*rows, strict=True))
        return LaneColumns(*(np.array(c) for c in cols))  # type: ignore[arg-type]

    ops = lanes([(0, 7, 0.0, 5.0, 1), (-1, 9, 1.0, 2.0, 3), (0, 7, 4.0, 6.0, 4)])
    slow = lanes([(0, 8, 3.0, 4.0, 2), (0, 7, 5.5, 7.0, 5)])
    joined = LaneColumns.joined([ops, slow])
    assert joined.number.tolist() == [1, 2, 3, 4, 5]
    assert joined.stream.tolist() == [7, 8, 9, 7, 7]
    v = Validator()
    n = 6
    v.feed_columns(
        EventColumns(0, np.ones(n, bool), np.zeros(n), np.ones(n), np.array(["k"] * n), joined)
    )
    assert list(v.lanes) == [(0, 7), (0, 8), (None, 9)]
    assert list(v.lanes[(0, 7)].number) == [1, 4, 5]
    assert list(v.lanes[(0, 7)].start) == [0.0, 4.0, 5.5]
    overlaps = list(v.lanes[(0, 7)].overlaps())
    assert overlaps == [("e1", "e4", 1.0), ("e4", "e5", 0.5)]


@pytest.mark.timeout(60)
def test_full_disk_at_the_gzips_last_flush_is_an_error_not_a_hang() -> None:
    # A small file is compressed in memory and first written at the gzip's close, after
    # the writer took the end mark: it used to wait for a second end mark forever.
    import errno
    import io

    from kerneltracer.analysis.timeline.render.inferscope_file import _background_gzip

    class FullDisk(io.RawIOBase):
        """Takes the gzip header, then is full."""

        taken = 0

        def writable(self) -> bool:
            return True

        def write(self, data: Any) -> int:
            if self.taken + len(data) > 16:
                raise OSError(errno.ENOSPC, "No space left on device")
            self.taken += len(data)
            return len(data)

    with pytest.raises(OSError, match="No space left"), _background_gzip(FullDisk()) as put:
        put(b"{}" * 100)


def test_written_first_or_forked_the_outputs_are_the_same(
    testdata_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Traces write the InferScope file before the analyses, in-process, and the host
    nesting is walked a run of rows at a time: the same file and report as one pass and
    the forked writer (still there for callers that raise ``WRITE_FIRST_ROWS``)."""
    import gzip
    import re

    from kerneltracer.analysis.timeline import pipeline
    from kerneltracer.analysis.timeline.render import convert
    from kerneltracer.analysis.timeline.writer import run_timeline

    trace = hta_path(testdata_dir, "nccl")
    with monkeypatch.context() as m:
        m.setattr(pipeline, "WRITE_FIRST_ROWS", 1 << 40)  # forked: what a caller may ask for
        run_timeline([trace], tmp_path / "forked", ops=pipeline.OpsOptions())
    assert pipeline.WRITE_FIRST_ROWS == 0  # the default writes first
    monkeypatch.setattr(convert, "_NESTING_CHUNK", 7)
    run_timeline([trace], tmp_path / "first", ops=pipeline.OpsOptions())

    def text(root: Path, name: str) -> bytes:
        (path,) = root.glob(f"*/{name}")
        data = gzip.decompress(path.read_bytes()) if name.endswith(".gz") else path.read_bytes()
        return re.sub(rb'"timestamp(_created)?": ?"[^"]*"', b"", data)

    for name in ("inferscope_trace.json.gz", "report.json", "ops.csv"):
        assert text(tmp_path / "first", name) == text(tmp_path / "forked", name)


@pytest.mark.parametrize("enabled", [True, False])
def test_no_cycle_collection_while_a_trace_is_analysed(
    testdata_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, enabled: bool
) -> None:
    """The cycle collector is paused through a trace's load, analyses, attribution and
    InferScope file (its scans of every live object were ~7% of the CPU), and left as it
    was found, also when the analysis fails."""
    import gc

    from kerneltracer.analysis.timeline import pipeline

    collections: list[int] = []
    seen: list[int] = []  # collections counted as the analysis ends, still inside the pause

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    inner = pipeline._analyze_file

    def spy(*args: Any, **kwargs: Any) -> pipeline.TraceAnalysis:
        out = inner(*args, **kwargs)
        seen.append(len(collections))
        return out

    monkeypatch.setattr(pipeline, "_analyze_file", spy)
    was = gc.isenabled()
    gc.callbacks.append(count)
    try:
        if not enabled:
            gc.disable()
        pipeline.analyze_file(
            hta_path(testdata_dir, "nccl"),
            inferscope_file=tmp_path / "i.json.gz",
            ops=pipeline.OpsOptions(),
            lanes=True,
        )
        assert seen == [0]
        assert gc.isenabled() is enabled
        with pytest.raises(Exception):  # noqa: B017 - any load error will do
            pipeline.analyze_file(tmp_path / "missing.json")
        assert gc.isenabled() is enabled
    finally:
        gc.callbacks.remove(count)
        if was:
            gc.enable()


def _streamed_in_chunks_of_8(trace: Any, path: Path) -> tuple[dict[str, Any], dict[str, Any], Any]:
    """(the file written in chunks of 8 events, the dicts' document, the writer's report),
    both documents without their creation time."""
    import gzip

    from kerneltracer.analysis.timeline.render.inferscope_file import write_inferscope

    report = write_inferscope(trace, path, chunk_size=8)
    doc = to_inferscope(trace)
    written = json.loads(gzip.decompress(path.read_bytes()))
    written["trace_metadata"].pop("timestamp_created")
    doc["trace_metadata"].pop("timestamp_created")
    return written, doc, report
