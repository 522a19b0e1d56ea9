"""Loading chrome traces: every real trace, every format quirk, and batch cutting."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kerneltracer.analysis.timeline.load import loader
from kerneltracer.analysis.timeline.load.loader import load_chrome_trace
from kerneltracer.errors import InputFileError, TraceLoadError
from tests.timeline.traces import ALL_TRACES, hta_path, kernel, write_trace, x


@pytest.mark.parametrize("key", sorted(ALL_TRACES))
def test_every_hta_trace_loads_with_all_its_timed_events(testdata_dir: Path, key: str) -> None:
    path = hta_path(testdata_dir, key)
    raw = orjson.loads(
        gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    )
    events = raw["traceEvents"] if isinstance(raw, dict) else raw
    timed = [e for e in events if e.get("ph") in ("X", "i", "I")]
    trace = load_chrome_trace(path)
    assert len(trace) == len(timed)
    assert trace.ts.tolist() == [e["ts"] for e in timed]
    assert [trace.names[n] for n in trace.name.tolist()] == [e["name"] for e in timed]


def test_legacy_capitalised_categories_are_normalised(testdata_dir: Path) -> None:
    trace = load_chrome_trace(hta_path(testdata_dir, "legacy"))
    assert "Kernel" in trace.raw_categories and "Runtime" in trace.raw_categories
    assert {"kernel", "cuda_runtime"} <= set(trace.categories)
    assert int(trace.category_mask({"kernel"}).sum()) == 4


def test_fractional_timestamps_are_detected(testdata_dir: Path) -> None:
    assert load_chrome_trace(hta_path(testdata_dir, "nccl")).float_timestamps
    assert not load_chrome_trace(hta_path(testdata_dir, "rank0_16")).float_timestamps


def test_missing_rank_and_distributed_info(testdata_dir: Path) -> None:
    assert load_chrome_trace(hta_path(testdata_dir, "rank_unavailable")).rank is None
    assert load_chrome_trace(hta_path(testdata_dir, "distributed_info_unavailable")).rank is None
    assert load_chrome_trace(hta_path(testdata_dir, "cpu_only")).rank == 34


def test_array_form_with_and_without_closing_bracket(tmp_path: Path) -> None:
    events = [x("a", "cpu_op", 1, 2), x("b", "cpu_op", 5, 1)]
    full = tmp_path / "full.json"
    full.write_bytes(orjson.dumps(events))
    cut = tmp_path / "cut.json"
    cut.write_bytes(orjson.dumps(events)[:-1] + b",\n")
    for path in (full, cut):
        trace = load_chrome_trace(path)
        assert [trace.names[n] for n in trace.name.tolist()] == ["a", "b"]


def test_begin_end_pairs_become_complete_events(tmp_path: Path) -> None:
    events = [
        {"ph": "B", "name": "outer", "pid": 1, "tid": 1, "ts": 10},
        {"ph": "B", "name": "inner", "pid": 1, "tid": 1, "ts": 12},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 15},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 30},
        {"ph": "E", "pid": 1, "tid": 2, "ts": 31},
    ]
    trace = load_chrome_trace(write_trace(tmp_path / "be.json", events))
    got = {
        trace.names[n]: (t, d)
        for n, t, d in zip(trace.name.tolist(), trace.ts.tolist(), trace.dur.tolist(), strict=True)
    }
    assert got == {"inner": (12, 3), "outer": (10, 20)}
    assert trace.bad_events == {"unmatched_end": 1}


def test_unreadable_inputs_raise_one_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": [ {"ph": "X", ')
    with pytest.raises(TraceLoadError, match="not a readable chrome trace"):
        load_chrome_trace(bad)
    no_events = tmp_path / "none.json"
    no_events.write_text('{"schemaVersion": 1}')
    with pytest.raises(TraceLoadError, match="no traceEvents"):
        load_chrome_trace(no_events)
    with pytest.raises(InputFileError, match="does not exist"):
        load_chrome_trace(tmp_path / "missing.json.gz")
    with pytest.raises(InputFileError, match="is a directory"):
        load_chrome_trace(tmp_path)


def _nasty_event(i: int, nested: bool, text: str) -> dict[str, Any]:
    args: dict[str, Any] = {"stream": 7, "correlation": i, "note": text}
    if nested:
        args["groups"] = [{"a": 1}, {"b": [{"c": "},{"}]}]
    return kernel(f"k{i} {text}", ts=10 * i, dur=5, corr=i) | {"args": args}


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.booleans(), st.sampled_from(["", "},{", '"}, {"', "]", "\\u00e9"])),
        min_size=1,
        max_size=40,
    ),
    st.integers(min_value=16, max_value=400),
    st.booleans(),
)
def test_batch_cutting_never_changes_what_is_parsed(
    tmp_path_factory: pytest.TempPathFactory,
    shape: list[tuple[bool, str]],
    block: int,
    layout: bool,
) -> None:
    # Tiny read blocks force many cuts, including ones inside nested args and strings.
    events = [_nasty_event(i, nested, text) for i, (nested, text) in enumerate(shape)]
    path = write_trace(
        tmp_path_factory.mktemp("cut") / "t.json.gz",
        events,
        kineto_layout=layout,
        deviceProperties=[{"id": 0, "name": "X"}],
    )
    original = loader._BLOCK
    loader._BLOCK = block
    try:
        trace = load_chrome_trace(path)
    finally:
        loader._BLOCK = original
    assert [trace.names[n] for n in trace.name.tolist()] == [e["name"] for e in events]
    assert trace.correlation.tolist() == list(range(len(events)))
    assert np.all(trace.stream == 7)
    assert [trace.args[i]["note"] for i in range(len(events))] == [
        e["args"]["note"] for e in events
    ]
    assert trace.metadata["deviceProperties"] == [{"id": 0, "name": "X"}]


def test_odd_ids_and_types_are_tolerated(tmp_path: Path) -> None:
    events = [
        kernel("huge", 0, 1, corr=2**70),
        x("text", "cuda_runtime", 1, 1, stream="0x7f", correlation="12"),
        {"ph": "X", "cat": 5, "name": 7, "pid": 1, "tid": 1, "ts": 3, "dur": 1},
        {"ph": "X", "name": "no_ts", "pid": 1, "tid": 1, "dur": 1},
        12,
    ]
    trace = load_chrome_trace(write_trace(tmp_path / "odd.json", events))
    assert trace.correlation.tolist() == [-1, 12, -1]
    assert trace.stream.tolist() == [7, -1, -1]
    assert trace.names[int(trace.name[2])] == "7" and trace.raw_categories[int(trace.cat[2])] == ""
    assert trace.bad_events == {"missing_timestamp": 1, "not_an_object": 1}


@pytest.mark.parametrize("block", [64, 1 << 20])
def test_id_columns_are_int32_unless_an_id_needs_64_bits(tmp_path: Path, block: int) -> None:
    """Stream, correlation and device ids are kept as int32 when they fit; one id past 32
    bits (in any batch: tiny read blocks cut the trace into many) widens its column to int64
    with every value intact, never wrapped."""
    big = 2**31  # one past int32
    small = [kernel(f"k{i}", ts=10 * i, dur=5, corr=i) for i in range(20)]
    wide = [
        *small,
        kernel("wide corr", ts=300, dur=5, corr=big + 3),
        x("launch", "cuda_runtime", 290, 1, correlation=big + 3, stream=-1, device=-(2**40)),
        kernel("wide stream", ts=400, dur=5, stream=2**40, corr=-1),
    ]
    original = loader._BLOCK
    loader._BLOCK = block
    try:
        narrow = load_chrome_trace(write_trace(tmp_path / "narrow.json", small))
        widened = load_chrome_trace(write_trace(tmp_path / "wide.json", wide))
    finally:
        loader._BLOCK = original
    for col in (narrow.stream, narrow.correlation, narrow.device):
        assert col.dtype == np.int32
    assert narrow.correlation.tolist() == list(range(20))
    for col in (widened.stream, widened.correlation, widened.device):
        assert col.dtype == np.int64
    assert widened.correlation.tolist() == [*range(20), big + 3, big + 3, -1]
    assert widened.stream.tolist() == [7] * 21 + [-1, 2**40]
    assert widened.device.tolist() == [0] * 21 + [-(2**40), 0]


def test_rocm_launch_calls_keep_the_kernel_they_name(testdata_dir: Path) -> None:
    """ROCm's launch calls name their kernel in args (how a capture trace, which ran no
    kernel, says what it captured); read only with op args, equal to the kernels run."""
    from tests.timeline.traces import hta_path

    path = hta_path(testdata_dir, "amd")
    trace = load_chrome_trace(path, op_args=True)
    assert len(trace.launch_kernels) == 14  # every hipLaunchKernel of the trace
    kernels = np.flatnonzero(trace.category_mask({"kernel"}))
    ran = {int(trace.correlation[r]): trace.names[int(trace.name[r])] for r in kernels}
    launched = {int(trace.correlation[r]): k for r, k in trace.launch_kernels.items()}
    assert all(ran[c] == k for c, k in launched.items() if c in ran)
    assert load_chrome_trace(path).launch_kernels == {}


# Args texts as writers spell them: objects with and without keys, whitespace around and
# inside, and values that are no object at all.
_ARGS_TEXTS = [
    None,  # no args key
    b"{}",
    b"{ }",
    b"{\n  }",
    b'{"External id": 5, "Input Dims": [[2, 3]]}',
    b'{ "stream": 7, "correlation": 9 }',
    b'{\n "External id": 6}',
    b"[1, 2]",
    b'"text"',
    b"3",
    b"null",
    b'{"kernel": "gemm", "x": {"y": []}}',
    # ids past int64, and ids that are no integer: read as -1 on both paths
    b'{"correlation": 18446744073709551615, "stream": 9223372036854775807}',
    b'{"stream": 9223372036854775808, "device": -9223372036854775808}',
    b'{"stream": "0x7f", "correlation": "12", "device": 1.0}',
    b'{"correlation": true, "stream": 1e3}',
]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["cpu_op", "kernel", "cuda_runtime", "gpu_user_annotation"]),
            st.sampled_from(range(len(_ARGS_TEXTS))),
        ),
        min_size=1,
        max_size=30,
    )
)
def test_kept_args_are_those_of_the_per_event_rules(shape: list[tuple[str, int]]) -> None:
    """The batch path cuts the args it keeps out of the batch's array of args in runs, and
    reads the ids as integers where the decoder can; what it keeps (whole args of GPU
    events, host ops' args, the ids) is what the per-event rules keep from the same
    events."""
    from kerneltracer.analysis.timeline.load.builder import Builder

    parts = []
    for i, (cat, which) in enumerate(shape):
        text = _ARGS_TEXTS[which]
        args = b"" if text is None else b',"args":' + text
        head = b'{"ph":"X","cat":"%s","name":"n%d","pid":1,"tid":2,"ts":%d,"dur":1'
        parts.append(head % (cat.encode(), i, i) + args + b"}")
    data = b"[" + b",".join(parts) + b"]"

    def kept(builder: Builder) -> tuple[Any, ...]:
        assert builder.add_json_array(data)
        cols = builder.finish()
        op_args = cols["op_args"]
        return (
            dict(cols["args"].items()),
            {r: op_args[r] for r in op_args},
            cols["correlation"].tolist(),
            cols["stream"].tolist(),
            cols["device"].tolist(),
            builder.launch_kernels,
        )

    batch = Builder(Path("t.json"), op_args=True)
    per_event = Builder(Path("t.json"), op_args=True)
    per_event._add_rows_columnar = lambda rows: False  # type: ignore[method-assign]
    assert kept(batch) == kept(per_event)
