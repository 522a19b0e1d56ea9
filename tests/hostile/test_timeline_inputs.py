"""``kerneltracer timeline`` on hostile traces: refused at once, bounded, or counted."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path
from typing import Any

import pytest

from kerneltracer.analysis.timeline.load.loader import load_chrome_trace
from tests.helpers import kt
from tests.timeline.traces import kernel, write_trace, x


def _timeline(*args: str) -> tuple[int, str]:
    done = kt("timeline", *args, timeout=120)
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    return done.returncode, done.stderr.strip().splitlines()[-1]


def _whitespace_bomb(path: Path, mib: int) -> Path:
    """A gzip that opens a trace and then holds nothing but spaces (no event ever ends)."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [z.compress(b'{"traceEvents": [')]
    block = b" " * (1 << 20)
    parts += [z.compress(block) for _ in range(mib)]
    path.write_bytes(b"".join([*parts, z.flush()]))
    return path


def test_sparse_gigabyte_of_nul_bytes_is_refused_by_its_first_bytes(tmp_path: Path) -> None:
    sparse = tmp_path / "sparse.json"
    with open(sparse, "wb") as fh:
        fh.truncate(1 << 30)
    rc, line = _timeline(str(sparse), "-o", str(tmp_path / "out"))
    assert rc == 1
    nul16 = repr(bytes(16))
    assert line == f"error: {sparse}: not a JSON document (starts with {nul16})"
    assert not (tmp_path / "out" / "sparse").exists()


def test_gzip_bomb_is_refused_at_the_size_limit(tmp_path: Path) -> None:
    bomb = _whitespace_bomb(tmp_path / "bomb.json.gz", 48)
    assert bomb.stat().st_size < 1 << 20
    rc, line = _timeline(str(bomb), "-o", str(tmp_path / "out"), "--max-input-size", "16M")
    assert (rc, line) == (
        1,
        f"error: {bomb}: more than 16 MiB once decompressed (raise the limit with "
        "--max-input-size or KT_MAX_INPUT_SIZE; 0 = none)",
    )
    # Raised above its size, the same file is read to the end and refused for what it is.
    rc, line = _timeline(str(bomb), "-o", str(tmp_path / "out"), "--max-input-size", "0")
    assert rc == 1
    assert line == (
        f"error: {bomb}: over 32 MiB of text without the end of an event: not a chrome trace"
    )


def test_event_limit_and_its_flag(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "t.json", [x(f"op{i}", "cpu_op", i * 10, 5) for i in range(50)])
    rc, line = _timeline(str(trace), "-o", str(tmp_path / "out"), "--max-events", "20")
    assert (rc, line) == (
        1,
        f"error: {trace}: more than 20 events (raise the limit with --max-events or "
        "KT_MAX_EVENTS; 0 = none)",
    )
    rc, _ = _timeline(str(trace), "-o", str(tmp_path / "out"), "--max-events", "50")
    assert rc == 0


def test_non_finite_numbers_are_counted_not_fatal(tmp_path: Path) -> None:
    """One NaN or 1e400 used to make the whole trace 'not a readable chrome trace'."""
    events = [json.dumps(x(f"op{i}", "cpu_op", i * 10, 5)) for i in range(60_000)]
    events[100] = events[100].replace('"ts": 1000', '"ts": NaN')
    events[30_000] = events[30_000].replace('"ts": 300000', '"ts": 1e400')
    events[40_000] = events[40_000].replace('"dur": 5', '"dur": Infinity')
    events[-1] = events[-1].replace('"dur": 5', '"dur": -Infinity')  # in the document's tail
    path = tmp_path / "nan.json.gz"
    path.write_bytes(gzip.compress(('{"traceEvents": [\n' + ",\n".join(events) + "\n]}").encode()))
    trace = load_chrome_trace(path)
    assert len(trace) == 60_000 - 4
    assert trace.bad_events == {
        "timestamp_not_finite": 2,
        "duration_not_finite": 1,
        "negative_duration": 1,
    }
    rc, line = _timeline(str(path), "-o", str(tmp_path / "out"))
    assert rc == 0, line


def test_folder_and_device_are_usage_errors_naming_what_they_are(tmp_path: Path) -> None:
    # A folder is a set of traces (a job's ranks); one with none says what it looked for.
    folder = tmp_path / "empty"
    folder.mkdir()
    assert _timeline(str(folder), "-o", str(tmp_path / "o")) == (
        2,
        f"error: {folder}: no chrome trace under it (*.json.gz or *trace*.json files)",
    )
    assert _timeline("/dev/zero", "-o", str(tmp_path / "o")) == (
        2,
        "error: trace file /dev/zero is not a regular file (a device, FIFO or socket)",
    )


def _gpu_events(n: int = 30) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for i in range(n):
        t = i * 100
        events += [x(f"aten::op{i}", "cpu_op", t, 50)]
        events += [x("cudaLaunchKernel", "cuda_runtime", t + 10, 5, correlation=i)]
        events += [kernel(f"k{i}", t + 30, 40, corr=i)]
    return events


@pytest.mark.parametrize(
    ("field", "value", "kind"),
    [
        ("ts", 1e300, "timestamp_out_of_range"),
        ("ts", -1e300, "timestamp_out_of_range"),
        ("ts", 10**30, "timestamp_out_of_range"),
        ("dur", 1e308, "duration_out_of_range"),
        ("dur", 10**400, "duration_out_of_range"),
        ("dur", 2.0**53, "duration_out_of_range"),
    ],
)
def test_absurd_times_are_bad_events_and_the_outputs_complete(
    tmp_path: Path, field: str, value: float, kind: str
) -> None:
    """Issue 38: ``ts: 1e300`` gave "1e300 ms traced"; ``dur: 1e308`` lost the ops files,
    leaked numpy's RuntimeWarning and exited 0. Times no clock gives (beyond 2^53 µs, where
    a double no longer holds a microsecond) are malformed events, counted by kind."""
    events = _gpu_events()
    for e in events[-3:]:  # the last op, its launch and its kernel
        e[field] = value
    path = tmp_path / "absurd.json"
    path.write_text(json.dumps({"traceEvents": events}))
    done = kt("timeline", str(path), "-o", str(tmp_path / "out"), timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert f"3 malformed events (3 {kind}) dropped" in done.stderr
    out = tmp_path / "out" / "absurd"
    report = json.loads((out / "report.json").read_text())
    assert report["source"]["bad_events"] == {kind: 3}
    assert report["analysis"]["summary"]["end_to_end_latency_us"] == 2870
    assert report["summary"].startswith("absurd.json (rank 0): 2.87 ms traced")
    ops = json.loads((out / "ops.json").read_text())
    assert ops["gpu_events"] == 29 and ops["gpu_time_us"] == 29 * 40
    assert ops["attributed_share"] == 1.0
    for name in ("ops.csv", "ops.parquet", "kernels_by_op.csv", "ops.html", "report.html"):
        assert (out / name).is_file(), name


def test_times_at_the_edge_of_a_clock_are_data(tmp_path: Path) -> None:
    """Epoch timestamps in µs (1.7e15 today) with ns fractions load as they are."""
    base = 1_700_000_000_000_000.0
    events = [x("aten::mm", "cpu_op", base + 0.25, 10.5), x("aten::add", "cpu_op", base + 20, 1)]
    trace = load_chrome_trace(write_trace(tmp_path / "t.json", events))
    assert trace.bad_events == {}
    assert trace.ts.tolist() == [base + 0.25, base + 20]


def test_truncated_trace_says_truncated_not_too_large(tmp_path: Path) -> None:
    """Issue 38: the cut file's last bytes, read as the gzip trailer's size, said "more than
    2 GiB once decompressed (raise the limit …)"."""
    events = [x(f"op{i}", "cpu_op", i * 7919, i % 97) for i in range(40_000)]
    data = gzip.compress(json.dumps({"traceEvents": events}).encode())
    end = next(
        e
        for e in range(len(data) // 2, len(data))
        if int.from_bytes(data[e - 4 : e], "little") > 1 << 31
    )
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(data[:end])
    rc, line = _timeline(str(cut), "-o", str(tmp_path / "out"))
    assert (rc, line) == (
        1,
        f"error: {cut}: truncated gzip file (it ends before its compressed stream does: "
        "an interrupted copy or download?)",
    )
    assert not (tmp_path / "out" / "cut").exists()
