"""A report remembers the time its jobs took (issue 38): after a no-op rerun (every job
bypassed, run.json rewritten with the rerun's 0 s), the page and run_summary.json still
show the jobs' own recorded times, labelled, and say the wall time is the last
invocation's."""

from __future__ import annotations

from pathlib import Path

import orjson

from kerneltracer.report import build_report
from tests.report.runs import make_run, status


def _rerun(tmp_path: Path) -> Path:
    jobs = {
        "a/torch_dispatch": status(
            "a/torch_dispatch",
            "a",
            started_at="2026-01-01T00:00:00.000+00:00",
            finished_at="2026-01-01T00:01:40.000+00:00",
            duration_s=100.0,
        ),
        "b/torch_dispatch": status(
            "b/torch_dispatch",
            "b",
            started_at="2026-01-01T00:01:40.000+00:00",
            finished_at="2026-01-01T00:02:29.000+00:00",
            duration_s=49.0,
        ),
    }
    run = make_run(tmp_path / "run", jobs)
    # The no-op rerun a day later: run.json says when it ran, and that it took nothing.
    manifest = orjson.loads((run / "run.json").read_bytes())
    manifest.update(
        started_at="2026-01-02T00:00:00.000+00:00",
        finished_at="2026-01-02T00:00:00.040+00:00",
        wall_s=0.04,
    )
    (run / "run.json").write_bytes(orjson.dumps(manifest))
    return run


def test_noop_rerun_keeps_the_jobs_times(tmp_path: Path) -> None:
    run = _rerun(tmp_path)
    result = build_report(run)
    page = result.index.read_text()
    assert "wall time 40ms (the last invocation; 2 of 2 job results are from earlier ones)" in (
        page
    ), page[:2000]
    assert "jobs ran 2m29s from the first start to the last end, 2m29s of job time" in page
    summary = orjson.loads((result.index.parent / "run_summary.json").read_bytes())
    assert summary["wall_s"] == 0.04
    assert summary["jobs_span_s"] == 149.0
    assert summary["jobs_duration_s"] == 149.0
    assert summary["jobs_from_earlier_invocations"] == 2


def test_a_run_that_ran_its_jobs_says_nothing_of_earlier_ones(tmp_path: Path) -> None:
    run = make_run(
        tmp_path / "run",
        {
            "a/torch_dispatch": status(
                "a/torch_dispatch",
                "a",
                started_at="2026-01-01T00:00:01.000+00:00",
                finished_at="2026-01-01T00:00:03.500+00:00",
            )
        },
    )
    page = build_report(run).index.read_text()
    assert "wall time 10m00s · jobs ran" in page
    assert "from earlier ones" not in page
    assert "jobs ran 2.5s from the first start to the last end, 2.5s of job time" in page
