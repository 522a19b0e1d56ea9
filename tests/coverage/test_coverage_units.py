"""Coverage on synthetic run dirs: aggregation per source, jobs that are not ok, unreadable
inputs, odd names, and the exported files."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kerneltracer.coverage import Coverage, OpUse, build_coverage, write_coverage
from kerneltracer.coverage.export import COLUMNS, arrow_schema
from kerneltracer.errors import RunDirError
from tests.coverage.synth import dispatch_files, make_job, profiler_files

FIXTURES = Path(__file__).parent / "fixtures"
XSS = "<script>alert(1)</script>"


@pytest.fixture
def run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    make_job(
        run,
        "m-a",
        "torch_dispatch",
        dispatch_files({"aten.mm.default": (4, 2), "aten.add.Tensor": (3, 1)}),
    )
    make_job(
        run,
        "m-b",
        "torch_dispatch",
        dispatch_files({"aten.mm.default": (1, 1), "aten.relu.default": (2, 1)}),
    )
    make_job(
        run,
        "m-a",
        "torch_profiler",
        profiler_files(
            [
                ("ProfilerStep*", "[]", 2, 900.0, 0.0),
                ("aten::mm", "[[2, 3], [3, 4]]", 3, 40.0, 0.0),
                ("aten::mm", "[[8, 3], [3, 4]]", 1, 60.0, 0.0),
                ("aten::add", "[[2], [2]]", 3, 5.0, 0.0),
            ]
        ),
    )
    make_job(run, "m-c", "torch_dispatch", {}, status="failed", reason="RuntimeError: boom")
    make_job(run, "m-a", "torch_compile", {"x.txt": "not a coverage source"})
    return run


def test_dispatch_matrix_unique_ops_and_models(run: Path) -> None:
    cov = build_coverage(run)
    assert cov.models == ("m-a", "m-b")  # m-c's only job failed
    assert cov.matrix() == {
        "aten.add.Tensor": {"m-a": 3},
        "aten.mm.default": {"m-a": 4, "m-b": 1},
        "aten.relu.default": {"m-b": 2},
    }
    assert cov.signatures()["aten.mm.default"] == {"m-a": 2, "m-b": 1}
    assert cov.unique_ops() == {"m-a": ["aten.add.Tensor"], "m-b": ["aten.relu.default"]}
    assert cov.ops() == ["aten.add.Tensor", "aten.mm.default", "aten.relu.default"]
    assert cov.not_ok == (("m-c", "torch_dispatch", "failed"),)
    assert cov.problems == ()
    assert cov.sources() == ["torch_dispatch", "torch_profiler"]


def test_profiler_rows_aggregate_by_name_without_step_rows(run: Path) -> None:
    cov = build_coverage(run)
    assert cov.ops("torch_profiler") == ["aten::add", "aten::mm"]
    mm = cov.use("aten::mm", "m-a", "torch_profiler")
    assert mm == OpUse("aten::mm", "m-a", "torch_profiler", 4, None, 100.0)
    assert cov.top_ops_by_time(1) == [("aten::mm", 100.0)]
    assert cov.top_ops_by_time(5) == [("aten::mm", 100.0), ("aten::add", 5.0)]


def test_profiler_prefers_device_time_when_present(tmp_path: Path) -> None:
    make_job(
        tmp_path,
        "gpu",
        "torch_profiler",
        profiler_files([("aten::mm", "[]", 2, 30.0, 0.0), ("sgemm_kernel", "[]", 2, 0.0, 250.0)]),
    )
    cov = build_coverage(tmp_path)
    assert cov.top_ops_by_time() == [("sgemm_kernel", 250.0), ("aten::mm", 30.0)]


def test_vllm_op_table_from_fixture(tmp_path: Path) -> None:
    make_job(
        tmp_path,
        "llama-1b",
        "vllm_profiler",
        {"op_table.csv": (FIXTURES / "op_table.csv").read_bytes()},
    )
    cov = build_coverage(tmp_path)
    assert cov.models_for("vllm_profiler") == ["llama-1b"]
    assert len(cov.ops("vllm_profiler")) == 5
    sgemm = cov.use("ampere_sgemm_128x64_tn", "llama-1b", "vllm_profiler")
    assert sgemm is not None and sgemm.calls == 24 and sgemm.self_time_us == 1450.0
    assert cov.top_ops_by_time(2, source="vllm_profiler") == [
        ("ampere_sgemm_128x64_tn", 1450.0),
        ("flash_fwd_kernel<<script>>", 512.0),
    ]
    # Without a dispatch summary the source-less queries use the best source there is.
    assert cov.default_source() == "vllm_profiler"
    assert cov.matrix() == cov.matrix("vllm_profiler") and len(cov.matrix()) == 5


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (None, "missing"),
        (b'{"ops": {"aten.mm.default": {"calls": 1', "not valid JSON"),
        (b"[1, 2]", "has no 'ops' object"),
        (b'{"ops": {"aten.mm.default": {"calls": -1, "signatures": 1}}}', "non-negative integer"),
        (b'{"ops": {"aten.mm.default": {"calls": "7", "signatures": 1}}}', "non-negative integer"),
    ],
)
def test_unreadable_dispatch_summary_is_surfaced_not_fatal(
    run: Path, content: bytes | None, reason: str
) -> None:
    path = run / "jobs/m-b/torch_dispatch/dispatch_summary.json"
    if content is None:
        path.unlink()
    else:
        path.write_bytes(content)
    cov = build_coverage(run)
    (problem,) = cov.problems
    assert problem.job_key == "m-b/torch_dispatch"
    assert problem.path == "jobs/m-b/torch_dispatch/dispatch_summary.json"
    assert reason in problem.reason
    # The model stays listed (its job was ok) but contributes no ops; the others are intact.
    assert "m-b" in cov.models and cov.models_for() == ["m-a"]
    assert cov.matrix()["aten.mm.default"] == {"m-a": 4}


def test_corrupt_profiler_csv_and_status_files_are_surfaced(run: Path) -> None:
    (run / "jobs/m-a/torch_profiler/key_averages.csv").write_text("name,calls\naten::mm,1\n")
    (run / "jobs/m-b/torch_dispatch/_TRACE_STATUS.json").write_text('{"schema_version": 1, "sta')
    cov = build_coverage(run)
    reasons = {p.job_key: p.reason for p in cov.problems}
    assert "lacks column(s)" in reasons["m-a/torch_profiler"]
    assert "corrupt" in reasons["m-b/torch_dispatch"]
    assert cov.models == ("m-a",)


def test_job_dir_without_status_is_listed(run: Path) -> None:
    (run / "jobs/m-d/torch_dispatch").mkdir(parents=True)
    (run / "jobs/m-d/print_fx").mkdir(parents=True)  # not a coverage source: not listed
    cov = build_coverage(run)
    assert [(p.job_key, p.reason) for p in cov.problems] == [
        ("m-d/torch_dispatch", "no status file (job never finished)")
    ]


def test_train_mode_is_a_separate_column(run: Path) -> None:
    make_job(
        run, "m-a", "torch_dispatch", dispatch_files({"aten.mm.default": (9, 3)}), mode="train"
    )
    cov = build_coverage(run)
    assert cov.matrix()["aten.mm.default"] == {"m-a": 4, "m-a [train]": 9, "m-b": 1}


def test_not_a_run_dir(tmp_path: Path) -> None:
    with pytest.raises(RunDirError, match="not a run dir"):
        build_coverage(tmp_path)


def _read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_exports_keep_odd_names_and_nulls(tmp_path: Path, run: Path) -> None:
    ops = {XSS: (1, 1), 'aten.op,"with"\ncomma.default': (2, 2)}
    make_job(run, XSS, "torch_dispatch", dispatch_files(ops), slug="evil")
    cov = build_coverage(run)
    out = tmp_path / "out"
    written = write_coverage(cov, out)
    assert [p.name for p in written] == [
        "coverage.csv",
        "coverage.parquet",
        "coverage_matrix.csv",
        "coverage_summary.json",
    ]
    rows = _read_csv(out / "coverage.csv")
    assert len(rows) == len(cov.uses)
    assert {(r["op"], r["model"]) for r in rows if r["model"] == XSS} == {(o, XSS) for o in ops}
    assert all(r["self_time_us"] == "" for r in rows if r["source"] == "torch_dispatch")
    assert all(r["signatures"] == "" for r in rows if r["source"] == "torch_profiler")

    table = pq.read_table(out / "coverage.parquet")
    assert table.schema.equals(arrow_schema())
    assert tuple(table.column_names) == COLUMNS
    back = table.to_pylist()
    assert back == [
        {
            "op": u.op,
            "model": u.model,
            "model_id": cov.variant(u.model)[0],
            "mode": cov.variant(u.model)[1],
            "phase": cov.variant(u.model)[2],
            "source": u.source,
            "calls": u.calls,
            "signatures": u.signatures,
            "self_time_us": u.self_time_us,
            "est_flops": u.est_flops,
            "est_bytes": u.est_bytes,
            "est_time_lb_us": u.est_time_us,
        }
        for u in cov.uses
    ]
    assert table.column("signatures").null_count == len(cov.ops("torch_profiler"))
    assert table.column("self_time_us").null_count == sum(
        u.source == "torch_dispatch" for u in cov.uses
    )

    matrix = _read_csv(out / "coverage_matrix.csv")
    assert list(matrix[0]) == ["op", XSS, "m-a", "m-b"]  # models in sorted order
    by_op = {r["op"]: r for r in matrix}
    assert by_op["aten.mm.default"] == {"op": "aten.mm.default", XSS: "0", "m-a": "4", "m-b": "1"}
    assert by_op[XSS][XSS] == "1"

    summary = orjson.loads((out / "coverage_summary.json").read_bytes())
    assert summary["models"] == [XSS, "m-a", "m-b"]
    assert summary["not_ok"] == [{"model": "m-c", "source": "torch_dispatch", "status": "failed"}]
    assert set(summary["unique_ops"]["torch_dispatch"][XSS]) == set(ops)


def test_empty_coverage_writes_valid_empty_files(tmp_path: Path) -> None:
    (tmp_path / "run/jobs").mkdir(parents=True)
    cov = build_coverage(tmp_path / "run")
    assert cov == Coverage(models=(), uses=(), est_device="H100")
    write_coverage(cov, tmp_path / "out")
    table = pq.read_table(tmp_path / "out/coverage.parquet")
    assert table.num_rows == 0 and table.schema.equals(arrow_schema())
    assert (tmp_path / "out/coverage_matrix.csv").read_text() == "op\n"


def test_rewrite_replaces_files_atomically(tmp_path: Path, run: Path) -> None:
    out = tmp_path / "out"
    write_coverage(build_coverage(run), out)
    shutil.rmtree(run / "jobs/m-b")
    write_coverage(build_coverage(run), out)
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temp files left
    assert {r["model"] for r in _read_csv(out / "coverage.csv")} == {"m-a"}
    assert pa.types.is_int64(pq.read_table(out / "coverage.parquet").schema.field("calls").type)
