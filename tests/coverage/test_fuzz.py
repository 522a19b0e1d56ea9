"""Damaged coverage inputs: bad rows are skipped and counted by kind, never a crash.

The vLLM op table is a real-shaped fixture; the dispatch summary is what the tracer writes.
Each example breaks some rows in known ways and checks the counts; a file whose rows are
all bad stays an unreadable input. ``--strict`` turns any of it into exit 1.
"""

from __future__ import annotations

import csv
import io
import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kerneltracer.coverage import build_coverage
from tests.coverage.synth import dispatch_files, make_job
from tests.helpers import kt

_SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FIXTURE = Path(__file__).parent / "fixtures" / "op_table.csv"
_CSV_BREAKS = {"number_not_numeric": "abc", "number_not_finite": "inf"}


@_SETTINGS
@given(data=st.data())
def test_broken_csv_rows_are_counted_by_kind(data: st.DataObject) -> None:
    rows = list(csv.DictReader(io.StringIO(FIXTURE.read_text())))
    picks = data.draw(st.lists(st.integers(0, len(rows) - 1), max_size=len(rows), unique=True))
    expected: dict[str, int] = {}
    for i in picks:
        kind = data.draw(st.sampled_from(sorted(_CSV_BREAKS)))
        rows[i][data.draw(st.sampled_from(["count", "self_us"]))] = _CSV_BREAKS[kind]
        expected[kind] = expected.get(kind, 0) + 1
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp)
        make_job(run, "m", "vllm_profiler", {"op_table.csv": out.getvalue()})
        cov = build_coverage(run)
    if len(picks) == len(rows):  # nothing usable: the file is a problem, with the reason
        (problem,) = cov.problems
        assert f"no usable row ({len(rows)} bad" in problem.reason
        assert not cov.bad_rows
        return
    assert not cov.problems
    assert {b.path: b.counts for b in cov.bad_rows} == (
        {"jobs/m/vllm_profiler/op_table.csv": expected} if expected else {}
    )
    assert len(cov.ops("vllm_profiler")) == len(rows) - len(picks)


_values = st.none() | st.booleans() | st.integers() | st.text(max_size=5) | st.lists(st.none())


@_SETTINGS
@given(calls=_values, sigs=_values)
@example(calls=2**64, sigs=1)
@example(calls=2**63, sigs=1)
def test_dispatch_entries_of_any_type_never_crash(calls: object, sigs: object) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp)
        files = dispatch_files({"aten.mm.default": (1, 1), "aten.add.Tensor": (2, 1)})
        text = str(files["dispatch_summary.json"])
        doc = json.loads(text)
        doc["ops"]["aten.add.Tensor"] = {"calls": calls, "signatures": sigs}
        make_job(run, "m", "torch_dispatch", {**files, "dispatch_summary.json": json.dumps(doc)})
        cov = build_coverage(run)
    # orjson reads an integer past uint64 as a float, which the parser rightly counts as bad;
    # past 2^48 it is no real count (and sums of them would overflow the int64 columns).
    good = all(type(v) is int and 0 <= v <= 2**48 for v in (calls, sigs))  # type: ignore[operator]
    assert cov.matrix().get("aten.mm.default") == {"m": 1}
    assert bool(cov.bad_rows) is not good
    if not good:
        assert cov.bad_rows[0].counts == {"count_not_a_count": 1}


def test_strict_fails_on_bad_rows(tmp_path: Path) -> None:
    run = tmp_path / "run"
    table = FIXTURE.read_text().replace("24,1800.5,350.25", "24,1800.5,oops", 1)
    make_job(run, "m", "vllm_profiler", {"op_table.csv": table})
    proc = kt("coverage", str(run), "-o", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    assert "malformed rows skipped: jobs/m/vllm_profiler/op_table.csv: 1" in proc.stderr
    strict = kt("coverage", "--strict", str(run), "-o", str(tmp_path / "strict"))
    assert strict.returncode == 1
    assert "--strict: 0 unreadable input(s), 1 malformed row(s)" in strict.stderr
    assert not (tmp_path / "strict").exists()
