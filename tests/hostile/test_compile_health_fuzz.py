"""Fuzzing compile health's reading of TORCH_TRACE logs: any file gives one row in a known
state, never an exception, and a log cut anywhere before its compile's end is never
healthy (issue 38: a cut log was ``ok``, 100% pass rate, 0.0 s).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kerneltracer.analysis.compile_health.fleet import logs_health
from kerneltracer.analysis.compile_health.health import STATES, UNTRUSTED

_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def simple(testdata_dir: Path) -> bytes:
    return (testdata_dir / "tlparse" / "simple.log").read_bytes()


def _health(data: bytes) -> tuple[str, float | None, float | None]:
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "fuzz.log"
        log.write_bytes(data)
        fleet = logs_health([log])
    (job,) = fleet.jobs
    assert job.compile_status in STATES
    assert job.fail_reason is None or "\n" not in job.fail_reason
    if job.compile_status in UNTRUSTED:
        assert job.fail_reason and job.row()["compile_time_s"] is None
    return job.compile_status, job.row()["compile_time_s"], fleet.summary()["pass_rate"]


@_SETTINGS
@given(st.binary(max_size=2000))
def test_random_bytes(data: bytes) -> None:
    _health(data)


@_SETTINGS
@given(st.data())
def test_cut_before_the_compile_ends_is_never_healthy(simple: bytes, data: st.DataObject) -> None:
    end = simple.index(b'{"compilation_metrics"')
    end = simple.rindex(b"\n", 0, end)  # the start of the metrics line: the compile's end
    cut = data.draw(st.integers(0, end))
    state, time_s, pass_rate = _health(simple[:cut])
    assert state in (*UNTRUSTED, "no_log"), (cut, state)
    assert (pass_rate is None and time_s is None) or state == "no_log"


@_SETTINGS
@given(st.lists(st.tuples(st.integers(0, 250_000), st.integers(0, 64), st.binary(max_size=8))))
def test_random_edits_of_a_whole_log(simple: bytes, edits: list[tuple[int, int, bytes]]) -> None:
    text = simple
    for at, cut, insert in edits:
        text = text[:at] + insert + text[at + cut :]
    _health(text)
