"""diff_runs on synthetic run dirs: each kind of change alone, thresholds, escaping, schema."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kerneltracer.coverage.diff import diff_runs
from kerneltracer.coverage.diff_html import render_diff_html, write_diff
from kerneltracer.coverage.diff_schema import DiffReport, SourceOp, StatusChange
from kerneltracer.errors import UsageError
from tests.coverage.synth import dispatch_files, fail_job, make_job, profiler_files

SCHEMA_FILE = Path(__file__).parents[2] / "kerneltracer/coverage/diff.schema.json"
XSS = "<script>alert(1)</script>"


def _make_run(run: Path, mm_time: float = 100.0, mm_calls: int = 4) -> Path:
    make_job(
        run,
        "m-a",
        "torch_dispatch",
        dispatch_files({"aten.mm.default": (mm_calls, 2), "aten.add.Tensor": (3, 1)}),
    )
    make_job(
        run,
        "m-a",
        "torch_profiler",
        profiler_files([("aten::mm", "[]", 4, mm_time, 0.0), ("aten::add", "[]", 3, 5.0, 0.0)]),
    )
    make_job(run, "m-b", "torch_dispatch", dispatch_files({"aten.relu.default": (2, 1)}))
    return run


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    a = _make_run(tmp_path / "a")
    b = tmp_path / "b"
    shutil.copytree(a, b)
    return a, b


def _only_change(report: DiffReport) -> dict[str, object]:
    """The single changed model's non-empty change lists."""
    (model,) = report.models
    return {k: v for k, v in model.model_dump().items() if v}


def test_identical_runs_have_no_changes(runs: tuple[Path, Path]) -> None:
    report = diff_runs(*runs)
    assert not report.has_changes
    assert report.models == [] and report.problems == []
    assert report.summary.models_compared == 2 and report.summary.models_changed == 0


def test_status_change_carries_the_new_reason(runs: tuple[Path, Path]) -> None:
    a, b = runs
    fail_job(b / "jobs/m-a/torch_profiler", "OutOfMemoryError: CUDA out of memory", "oom")
    report = diff_runs(a, b)
    assert _only_change(report) == {
        "model": "m-a",
        "status_changes": [
            StatusChange(
                tracer="torch_profiler",
                before="ok",
                after="oom",
                reason_after="OutOfMemoryError: CUDA out of memory",
            ).model_dump()
        ],
    }


def test_failed_dispatch_is_a_status_change_not_removed_ops(runs: tuple[Path, Path]) -> None:
    a, b = runs
    fail_job(b / "jobs/m-a/torch_dispatch", "RuntimeError: boom")
    report = diff_runs(a, b)
    assert report.summary.status_changes == 1
    assert report.summary.ops_removed == 0 and report.summary.count_changes == 0


def test_ops_added_removed_and_count_changes(tmp_path: Path) -> None:
    a = _make_run(tmp_path / "a")
    b = _make_run(tmp_path / "b", mm_calls=6)
    (b / "jobs/m-b/torch_dispatch").joinpath("dispatch_summary.json").write_text(
        json.dumps({"ops": {"aten.gelu.default": {"calls": 2, "signatures": 1}}})
    )
    report = diff_runs(a, b)
    by_model = {m.model: m for m in report.models}
    assert by_model["m-b"].ops_added == [SourceOp(source="torch_dispatch", op="aten.gelu.default")]
    assert by_model["m-b"].ops_removed == [
        SourceOp(source="torch_dispatch", op="aten.relu.default")
    ]
    (count,) = by_model["m-a"].count_changes
    assert (count.op, count.calls_before, count.calls_after) == ("aten.mm.default", 4, 6)
    assert by_model["m-a"].time_changes == [] and by_model["m-a"].status_changes == []


@pytest.mark.parametrize(
    ("after_us", "min_change", "min_us", "reported"),
    [
        (105.0, 0.10, 1.0, False),  # +5% is noise at 10%
        (130.0, 0.10, 1.0, True),  # +30%
        (130.0, 0.50, 1.0, False),  # below a 50% threshold
        (108.0, 0.05, 10.0, False),  # +8% but only 8 us
        (60.0, 0.10, 1.0, True),  # -40%
    ],
)
def test_time_changes_respect_thresholds(
    tmp_path: Path, after_us: float, min_change: float, min_us: float, reported: bool
) -> None:
    a = _make_run(tmp_path / "a", mm_time=100.0)
    b = _make_run(tmp_path / "b", mm_time=after_us)
    report = diff_runs(a, b, min_time_change=min_change, min_time_us=min_us)
    changes = [t for m in report.models for t in m.time_changes]
    if not reported:
        assert changes == []
        return
    (change,) = changes
    assert change.op == "aten::mm" and change.source == "torch_profiler"
    assert change.change == pytest.approx((after_us - 100.0) / 100.0)


def test_negative_threshold_is_a_usage_error(runs: tuple[Path, Path]) -> None:
    with pytest.raises(UsageError, match="negative"):
        diff_runs(*runs, min_time_change=-0.1)


def test_models_present_in_only_one_run(runs: tuple[Path, Path]) -> None:
    a, b = runs
    shutil.rmtree(b / "jobs/m-b")
    make_job(b, "m-new", "torch_dispatch", dispatch_files({"aten.mm.default": (1, 1)}))
    report = diff_runs(a, b)
    assert report.models_only_in_a == ["m-b"] and report.models_only_in_b == ["m-new"]
    assert report.models == [] and report.has_changes


def test_tracer_only_in_one_run_is_a_status_change(runs: tuple[Path, Path]) -> None:
    a, b = runs
    make_job(b, "m-b", "print_fx", {"graph.txt": "g"})
    change = _only_change(diff_runs(a, b))["status_changes"]
    assert change == [StatusChange(tracer="print_fx", before=None, after="ok").model_dump()]


def test_unreadable_input_is_a_problem_not_a_change(runs: tuple[Path, Path]) -> None:
    a, b = runs
    (b / "jobs/m-b/torch_dispatch/dispatch_summary.json").write_text("{broken")
    report = diff_runs(a, b)
    assert not report.has_changes
    (problem,) = report.problems
    assert (problem.run, problem.job_key) == ("b", "m-b/torch_dispatch")
    assert "not valid JSON" in problem.reason


def test_html_escapes_untrusted_names_and_is_self_contained(tmp_path: Path) -> None:
    a = tmp_path / "a"
    make_job(a, XSS, "torch_dispatch", dispatch_files({"aten.mm.default": (1, 1)}), slug="evil")
    b = tmp_path / "b"
    shutil.copytree(a, b)
    (b / "jobs/evil/torch_dispatch/dispatch_summary.json").write_text(
        json.dumps({"ops": {XSS: {"calls": 1, "signatures": 1}}})
    )
    fail_reason = f"RuntimeError: {XSS}"
    make_job(a, XSS, "print_fx", {"g.txt": "g"}, slug="evil")
    make_job(b, XSS, "print_fx", {}, slug="evil", status="failed", reason=fail_reason)
    report = diff_runs(a, b)
    page = render_diff_html(report)
    assert XSS not in page
    assert page.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 3  # model, op, reason
    assert "http://" not in page and "https://" not in page and "src=" not in page
    files = write_diff(report, tmp_path / "out")
    assert [f.name for f in files] == ["diff.json", "diff.html"]
    back = DiffReport.model_validate_json(files[0].read_bytes())
    assert back == report
    assert back.models[0].ops_added[0].op == XSS


def test_schema_file_matches_the_model() -> None:
    on_disk = json.loads(SCHEMA_FILE.read_text())
    assert on_disk == json.loads(json.dumps(DiffReport.model_json_schema())), (
        "regenerate kerneltracer/coverage/diff.schema.json from DiffReport.model_json_schema()"
    )


def test_vllm_kernel_time_changes(tmp_path: Path) -> None:
    table = (Path(__file__).parent / "fixtures/op_table.csv").read_text()
    a, b = tmp_path / "a", tmp_path / "b"
    make_job(a, "llama-1b", "vllm_profiler", {"op_table.csv": table})
    slower = table.replace(
        "ampere_sgemm_128x64_tn,kernel,24,1450.0,1450.0",
        "ampere_sgemm_128x64_tn,kernel,24,2900.0,2900.0",
    )
    make_job(b, "llama-1b", "vllm_profiler", {"op_table.csv": slower})
    (change,) = _only_change(diff_runs(a, b))["time_changes"]
    assert change["op"] == "ampere_sgemm_128x64_tn" and change["source"] == "vllm_profiler"
    assert change["change"] == pytest.approx(1.0)


def test_cli_threshold_option(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from kerneltracer.cli.main import root

    a = _make_run(tmp_path / "a", mm_time=100.0)
    b = _make_run(tmp_path / "b", mm_time=130.0)
    runner = CliRunner()

    def run(*extra: str) -> DiffReport:
        res = runner.invoke(root, ["diff", str(a), str(b), "--out", str(tmp_path / "o"), *extra])
        assert res.exit_code == 0, res.output
        return DiffReport.model_validate_json((tmp_path / "o/diff.json").read_bytes())

    assert run("--min-time-change", "20%").summary.time_changes == 1
    assert run("--min-time-change", "50").summary.time_changes == 0
    assert run("--min-time-change", "20%", "--min-time-us", "31").summary.time_changes == 0
    bad = runner.invoke(root, ["diff", str(a), str(b), "--min-time-change", "lots"])
    assert bad.exit_code == 2 and "is not a percentage" in bad.output
    failing = runner.invoke(
        root, ["diff", str(a), str(b), "--out", str(tmp_path / "o"), "--fail-on-change"]
    )
    assert failing.exit_code == 1
