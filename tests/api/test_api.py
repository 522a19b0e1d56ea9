"""The Python API (kerneltracer.api): the same engine as the CLI, tables as DataFrames,
the CLI's one-line errors as exceptions, and a public surface that is listed and tested."""

from __future__ import annotations

import inspect
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

import kerneltracer as kt
from kerneltracer import api
from kerneltracer.analysis.compile_health.export import BREAK_COLUMNS, TABLE_COLUMNS
from kerneltracer.cli.main import root
from kerneltracer.core.ops_csv import KERNEL_COLUMNS, OPS_COLUMNS
from kerneltracer.corpus.schema import arrow_schema as corpus_schema
from kerneltracer.coverage.export import COLUMNS as COVERAGE_COLUMNS
from kerneltracer.errors import (
    ConfigError,
    InputFileError,
    KernelTracerError,
    RunDirError,
    UsageError,
)
from tests.coverage.synth import make_job

PUBLIC = {
    "__version__",
    "CompileHealth",
    "Diff",
    "LogsResult",
    "ProgressEvent",
    "Run",
    "TimelineResult",
    "compile_health",
    "logs",
    "open_run",
    "timeline",
    "trace",
}
ALEXNET = "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz"


# --- the public surface --------------------------------------------------------------------


def test_public_names_are_listed_and_resolve() -> None:
    assert set(kt.__all__) == PUBLIC
    for name in PUBLIC:
        assert getattr(kt, name) is not None
    assert set(PUBLIC) <= set(dir(kt))
    with pytest.raises(AttributeError):
        _ = kt.Coverage  # type: ignore[attr-defined]


def test_everything_else_in_the_api_module_is_private() -> None:
    defined = {
        name
        for name, obj in vars(api).items()
        if (inspect.isfunction(obj) or inspect.isclass(obj)) and obj.__module__ == api.__name__
    }
    public = {n for n in defined if not n.startswith("_")}
    assert public == set(api.__all__) - {"JOB_COLUMNS", "OUTPUT_COLUMNS"}
    assert set(kt.__all__) - {"__version__"} <= set(api.__all__)
    for name in public:  # documented: the API reference is generated from these
        assert inspect.getdoc(getattr(api, name)), name


def test_import_kerneltracer_stays_light() -> None:
    # Every CLI command and worker imports the package: the API's pandas only on first use.
    code = "import sys, kerneltracer; print('pandas' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --- a real run, traced through the API ----------------------------------------------------


@pytest.fixture(scope="module")
def traced(
    tiny_models: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> tuple[api.Run, list[api.ProgressEvent]]:
    events: list[api.ProgressEvent] = []
    run = kt.trace(
        [str(tiny_models["tiny-gpt2"])],
        output_dir=tmp_path_factory.mktemp("api") / "run",
        tracers=["torch_dispatch", "torch_profiler"],
        on_progress=events.append,
    )
    return run, events


@pytest.mark.e2e
def test_trace_reports_progress_through_the_callback(
    traced: tuple[api.Run, list[api.ProgressEvent]],
) -> None:
    _, events = traced
    assert events[0].kind == "planned" and events[0].total == 2 and events[0].to_run == 2
    finished = [e for e in events if e.kind == "finished"]
    assert {(e.tracer, e.status) for e in finished} == {
        ("torch_dispatch", "ok"),
        ("torch_profiler", "ok"),
    }
    started = [e.key for e in events if e.kind == "started"]
    assert sorted(started) == sorted(e.key for e in finished)


@pytest.mark.e2e
def test_trace_prints_nothing(tiny_models: dict[str, Path], tmp_path: Path) -> None:
    code = (
        "import sys, kerneltracer as kt;"
        f"kt.trace([{str(tiny_models['tiny-bert'])!r}], output_dir={str(tmp_path / 'r')!r},"
        "tracers=['torch_dispatch'])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert (out.stdout, out.stderr) == ("", "")


@pytest.mark.e2e
def test_jobs_frame(traced: tuple[api.Run, list[api.ProgressEvent]]) -> None:
    run, _ = traced
    jobs = run.jobs
    assert tuple(jobs.columns) == api.JOB_COLUMNS
    assert sorted(jobs["tracer"]) == ["torch_dispatch", "torch_profiler"]
    assert set(jobs["status"]) == {"ok"}
    assert set(jobs["model"]) == {"tiny-gpt2"}
    assert (jobs["duration_s"] > 0).all() and (jobs["peak_rss_bytes"] > 0).all()
    assert jobs["reason"].isna().all()
    # The same rows `kerneltracer status --json` prints.
    out = CliRunner().invoke(root, ["status", str(run.path), "--json"])
    assert out.exit_code == 0, out.output
    assert out.output.count("\n") == len(jobs)


@pytest.mark.e2e
def test_outputs_by_kind(traced: tuple[api.Run, list[api.ProgressEvent]]) -> None:
    run, _ = traced
    every = run.outputs()
    assert tuple(every.columns) == api.OUTPUT_COLUMNS
    traces = run.outputs("chrome_trace")
    assert len(traces) == 1 and set(traces["tracer"]) == {"torch_profiler"}
    assert Path(traces["path"].iloc[0]).is_file()
    assert set(run.outputs("dispatch_signatures")["tracer"]) == {"torch_dispatch"}
    assert len(every) > len(traces)
    with pytest.raises(UsageError, match=r"unknown output kind 'trace' \(valid: .*chrome_trace"):
        run.outputs("trace")


@pytest.mark.e2e
def test_coverage_is_the_parquet_the_cli_writes(
    traced: tuple[api.Run, list[api.ProgressEvent]], tmp_path: Path
) -> None:
    run, _ = traced
    cov = run.coverage()
    assert tuple(cov.columns) == COVERAGE_COLUMNS
    assert "aten.addmm.default" in set(cov["op"])
    out = CliRunner().invoke(root, ["coverage", str(run.path), "-o", str(tmp_path)])
    assert out.exit_code == 0, out.output
    written = pd.read_parquet(tmp_path / "coverage.parquet", dtype_backend="pyarrow")
    pd.testing.assert_frame_equal(cov, written)


@pytest.mark.e2e
def test_corpus_and_costs(traced: tuple[api.Run, list[api.ProgressEvent]]) -> None:
    run, _ = traced
    corpus = run.corpus()
    assert tuple(corpus.columns) == tuple(corpus_schema().names)
    assert (corpus["calls"] > 0).all()
    by_op = run.costs()
    assert list(by_op.columns[:3]) == ["model", "op", "calls"]
    assert "aten.addmm.default" in set(by_op["op"])
    assert list(run.costs(by="model")["model"]) == ["tiny-gpt2"]
    with pytest.raises(UsageError, match="valid: model, module, op"):
        run.costs(by="kernel")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="valid"):
        run.costs(device="no-such-gpu")


@pytest.mark.e2e
def test_report_and_diff(traced: tuple[api.Run, list[api.ProgressEvent]], tmp_path: Path) -> None:
    run, _ = traced
    report = run.report(tmp_path / "report")
    assert report.index.is_file()
    same = run.diff(run.path)
    assert not same.has_changes and same.summary["models_compared"] == 1
    assert tuple(same.changes.columns) == ("model", "change", "tracer", "op", "before", "after")
    # A copy that lost one op: the diff names it.
    other = tmp_path / "other"
    shutil.copytree(run.path, other, ignore=shutil.ignore_patterns("report"))
    from tests.coverage.synth import remove_dispatch_op

    job = next((other / "jobs").glob("*/torch_dispatch*"))
    remove_dispatch_op(job, "aten.addmm.default")
    changes = run.diff(kt.open_run(other)).changes
    removed = changes[changes["change"] == "op_removed"]
    assert list(removed["op"]) == ["aten.addmm.default"]


@pytest.mark.e2e
def test_run_compile_health_without_compile_jobs(
    traced: tuple[api.Run, list[api.ProgressEvent]],
) -> None:
    run, _ = traced
    health = run.compile_health()
    assert tuple(health.jobs.columns) == TABLE_COLUMNS and health.jobs.empty
    assert health.summary["pass_rate"] is None


# --- bad input: the CLI's one-line errors, as exceptions -----------------------------------


def _cli_error(*args: str) -> str:
    out = CliRunner().invoke(root, list(args))
    assert out.exit_code != 0
    return out.output.strip().removeprefix("error: ")


def test_open_run_errors_are_the_clis(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(RunDirError) as exc:
        kt.open_run(missing)
    assert str(exc.value) == _cli_error("status", str(missing))
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.txt").write_text("x")
    with pytest.raises(RunDirError, match="is not a kerneltracer run dir") as exc:
        kt.open_run(tmp_path / "notes")
    assert str(exc.value) == _cli_error("status", str(tmp_path / "notes"))
    assert "\n" not in str(exc.value)


def test_trace_config_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("models:\n  - id: a/b\n    tracers: [no_such_tracer]\n")
    with pytest.raises(ConfigError, match="no_such_tracer") as exc:
        kt.trace(bad, output_dir=tmp_path / "r")
    assert str(exc.value) == _cli_error("run", str(bad), "-o", str(tmp_path / "r"))
    with pytest.raises(UsageError, match="needs output_dir"):
        kt.trace(["a/b"])
    with pytest.raises(ConfigError, match="tracers"):
        kt.trace({"models": [{"id": "a/b", "tracers": ["nope"]}]}, output_dir=tmp_path / "r2")
    with pytest.raises(UsageError, match="not int"):
        kt.trace(3, output_dir=tmp_path / "r3")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="unknown tracer 'x'"):
        kt.trace(["a/b"], output_dir=tmp_path / "r4", tracers=["x"])


def test_file_analyses_refuse_missing_inputs(tmp_path: Path) -> None:
    for call in (kt.timeline, kt.logs, kt.compile_health):
        with pytest.raises(KernelTracerError) as exc:
            call(tmp_path / "missing.json")
        assert "missing.json" in str(exc.value) and "\n" not in str(exc.value)
    not_trace = tmp_path / "t.json"
    not_trace.write_text("[1, 2")
    with pytest.raises(InputFileError):
        kt.timeline(not_trace)
    with pytest.raises(UsageError, match="no input given"):
        kt.timeline([])


# --- analyses of files a user already has (the test data) ----------------------------------


def test_timeline_on_a_real_gpu_trace(testdata_dir: Path) -> None:
    result = kt.timeline(testdata_dir / ALEXNET)
    summary = result.summary
    assert len(summary) == 1 and summary["end_to_end_latency_us"].iloc[0] > 0
    assert summary["bottleneck"].iloc[0] in {"cpu_bound", "gpu_bound", "memory_bound", "balanced"}
    breakdown = result.breakdown
    assert set(breakdown.columns) == {"trace", "rank", "category", "duration_us", "percentage"}
    assert (breakdown["duration_us"] >= 0).all() and len(breakdown) > 1
    ops = result.ops
    assert tuple(ops.columns) == ("trace", *OPS_COLUMNS)
    assert ops["gpu_time_us"].sum() > 0
    assert tuple(result.kernels.columns) == ("trace", *KERNEL_COLUMNS)
    assert len(result.kernels) > 0
    assert result.reports()[0]["summary"]
    assert kt.timeline(testdata_dir / ALEXNET, ops=False).ops.empty


def test_logs_tables_and_pages(testdata_dir: Path, tmp_path: Path) -> None:
    simple = testdata_dir / "tlparse" / "simple.log"
    result = kt.logs(simple)
    assert result.out_dirs == [None]
    compiles = result.compiles
    assert len(compiles) >= 1 and compiles["event_count"].sum() > 0
    envelopes = result.envelopes
    assert envelopes.set_index("type").loc["chromium_event", "count"] == 50
    assert result.parse_failures["count"].sum() == 0
    corrupt = kt.logs(testdata_dir / "tlparse" / "simple_corrupted_json.log")
    assert corrupt.parse_failures["count"].sum() > 0
    rendered = kt.logs([simple], out_dir=tmp_path / "out")
    assert (tmp_path / "out" / "index.html").is_file()
    assert rendered.out_dirs == [tmp_path / "out"]


def test_compile_health_on_logs(testdata_dir: Path) -> None:
    logs = testdata_dir / "tlparse"
    health = kt.compile_health([logs / "simple.log", logs / "comp_failure.log"])
    jobs = health.jobs
    assert tuple(jobs.columns) == TABLE_COLUMNS
    assert list(jobs["compile_status"]) == ["ok", "failed"]
    assert tuple(health.breaks.columns) == BREAK_COLUMNS
    assert health.summary["pass_rate"] == 0.5
    many = kt.compile_health(logs / "multi_rank_logs")
    assert many.jobs["recompiles"].iloc[0] > 0
    assert len(many.recompiles) > 0 and set(many.recompiles["reason"].str.len() > 0) == {True}


@pytest.mark.slow
def test_run_attribution_after_analyze(testdata_dir: Path, tmp_path: Path) -> None:
    # A profiler job whose trace is a real A100 one: analyze, then its ops by GPU time.
    run_dir = tmp_path / "run"
    make_job(
        run_dir,
        "alexnet",
        "torch_profiler",
        {"trace.json.gz": (testdata_dir / ALEXNET).read_bytes()},
    )
    run = kt.open_run(run_dir)
    assert run.attribution().empty  # not analysed yet
    outcomes = run.analyze()
    assert "timeline" in set(outcomes["analysis"]) and set(outcomes["state"]) == {"done"}
    attribution = run.attribution()
    assert tuple(attribution.columns) == ("key", "model", "trace", *OPS_COLUMNS)
    assert set(attribution["model"]) == {"alexnet"}
    # The same table as the file analysis of that trace.
    direct = kt.timeline(testdata_dir / ALEXNET).ops
    assert attribution["gpu_time_us"].sum() == pytest.approx(direct["gpu_time_us"].sum())


def test_the_package_root_offers_exactly_the_api_modules_names() -> None:
    import kerneltracer
    from kerneltracer import api

    assert set(kerneltracer._API) == set(api.__all__) - {"JOB_COLUMNS", "OUTPUT_COLUMNS"}
    assert all(hasattr(api, name) for name in api.__all__)
