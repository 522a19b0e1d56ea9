"""Compile health without a compiler: break texts, synthetic logs, fleet ranking, diff."""

from __future__ import annotations

import csv
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kerneltracer.analysis.compile_health.breaks import parse_break, recompile_key
from kerneltracer.analysis.compile_health.diff import (
    code_location,
    diff_fleets,
)
from kerneltracer.analysis.compile_health.diff_files import write_compile_diff
from kerneltracer.analysis.compile_health.export import TABLE_COLUMNS, write_fleet
from kerneltracer.analysis.compile_health.fleet import logs_health
from tests.support.compile_logs import SynthModel, write_log

PRINT_BREAK = """\
Graph break in user code at /work/m/modeling.py:9
Graph Break Reason: Encountered graph break when attempting to trace CALL: a function call:

Failed to trace builtin operator
  Explanation: Dynamo does not know how to trace builtin operator `print`

 For more details about this graph break, please visit: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0059.html

User code traceback:
  File "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1789, in _call_impl
    return forward_call(*args, **kwargs)
  File "/work/m/modeling.py", line 9, in forward
    print("hi")
"""


def test_break_text_gives_registry_id_type_user_frame_and_code() -> None:
    b = parse_break(PRINT_BREAK)
    assert (b.key, b.gb_id) == ("GB0059", "GB0059")
    assert b.gb_type == "Failed to trace builtin operator"
    assert b.frame == "/work/m/modeling.py:9"
    assert b.code == 'print("hi")'


def test_break_without_id_is_keyed_by_its_type() -> None:
    b = parse_break("'some new kind of break nobody registered'")
    assert b.gb_id is None
    assert b.key == "type:some new kind of break nobody registered"


def test_recompile_reasons_differing_in_sizes_are_one_reason() -> None:
    a = recompile_key("0/0: tensor 'x' size mismatch at index 0. expected 2, actual 3")
    b = recompile_key("[3/1]: tensor 'x' size mismatch at index 0. expected 4, actual 8")
    assert a == b == "tensor 'x' size mismatch at index N. expected N, actual N"


def test_code_location_ignores_the_install_root() -> None:
    a = code_location("/venvA/lib/python3.11/site-packages/transformers/m.py:12")
    b = code_location("/home/u/.venv/lib/python3.12/site-packages/transformers/m.py:12")
    assert a == b == "transformers/m.py:12"


@pytest.fixture
def synth_logs(tmp_path: Path) -> list[Path]:
    models = [
        SynthModel("a", frames=3, recompiles=1),
        SynthModel("b", frames=2, recompiles=0),
        SynthModel("c", frames=1, recompiles=2, failed=True),
    ]
    return [write_log(tmp_path / f"{m.name}.log", m, seed=i) for i, m in enumerate(models)]


def test_fleet_counts_ranks_and_writes(synth_logs: list[Path], tmp_path: Path) -> None:
    fleet = logs_health(synth_logs)
    rows = {Path(j.model).stem: j for j in fleet.jobs}
    assert rows["a"].counts["graphs"] == 6 and rows["a"].counts["recompiles"] == 3
    assert rows["a"].counts["distinct_breaks"] == 2 and rows["a"].counts["graph_breaks"] == 4
    assert rows["b"].counts["recompiles"] == 0 and rows["b"].counts["distinct_breaks"] == 1
    assert rows["c"].compile_status == "failed" and rows["c"].fail_type == "BackendCompilerFailed"
    assert rows["a"].counts["kernels_cpp"] == 6 * 4 and rows["a"].counts["kernels_extern"] == 6
    summary = fleet.summary()
    assert summary["pass_rate"] == pytest.approx(2 / 3, abs=1e-4)
    top = summary["top_breaks"]
    # GB0170 (first frame's break) hits a and b; GB0059 only a.
    assert [(t["key"], t["models"]) for t in top] == [("GB0170", 2), ("GB0059", 1)]
    assert top[0]["example_frame"].endswith("a.py:10")
    assert summary["top_recompile_reasons"][0]["models"] == 2

    out = tmp_path / "out"
    write_fleet(fleet, out)
    table = pq.read_table(out / "compile_health.parquet")
    assert tuple(table.column_names) == TABLE_COLUMNS and table.num_rows == 3
    with open(out / "compile_health.csv") as fh:
        assert len(list(csv.DictReader(fh))) == 3
    page = (out / "compile_health.html").read_text()
    assert "GB0170" in page and "Data-dependent branching" in page


def test_diff_names_only_what_changed(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    same = SynthModel("same", frames=2, recompiles=1)
    write_log(tmp_path / "a" / "same.log", same, seed=1)
    write_log(tmp_path / "b" / "same.log", same, seed=1)
    write_log(tmp_path / "a" / "x.log", SynthModel("x", frames=2, recompiles=1), seed=2)
    write_log(tmp_path / "b" / "x.log", SynthModel("x", frames=3, recompiles=0), seed=2)
    fa = logs_health(sorted((tmp_path / "a").iterdir()))
    fb = logs_health(sorted((tmp_path / "b").iterdir()))
    for j in fa.jobs + fb.jobs:  # paths differ by run: match by name, as job keys do
        j.job = Path(j.job).name
    d = diff_fleets(fa, fb)
    assert [j.job for j in d.jobs] == ["x.log"]
    changed = d.jobs[0].changed_fields()
    assert {"graphs", "recompiles", "frames", "breaks", "recompile_reasons"} <= set(changed)
    assert d.jobs[0].breaks_added[0]["gb_id"] == "GB0059"
    assert diff_fleets(fa, fa).has_changes is False
    written = write_compile_diff(d, tmp_path / "diff", "A", "B")
    assert [p.name for p in written] == [
        "compile_diff.json",
        "compile_diff.csv",
        "compile_diff.html",
    ]
    assert "+ break GB0059" in (tmp_path / "diff/compile_diff.html").read_text()
    assert "x.log,frames,2,3" in (tmp_path / "diff/compile_diff.csv").read_text()


def test_time_threshold_separates_noise(synth_logs: list[Path]) -> None:
    a = logs_health(synth_logs[:1])
    b = logs_health(synth_logs[:1])
    b.jobs[0].times = {k: v * 1.04 for k, v in a.jobs[0].times.items()}
    assert not diff_fleets(a, b).has_changes
    b.jobs[0].times = {k: v * 1.06 for k, v in a.jobs[0].times.items()}
    d = diff_fleets(a, b)
    assert "compile_time_s" in d.jobs[0].changed_fields()
    assert not diff_fleets(a, b, threshold=0.10).has_changes


def test_vllm_piecewise_compiles_are_tagged_not_recompiles(tmp_path: Path) -> None:
    log = write_log(tmp_path / "v.log", SynthModel("v", frames=1, recompiles=0, piecewise=6))
    (job,) = logs_health([log]).jobs
    assert job.counts["piecewise_compiles"] == 6
    assert job.counts["recompiles"] == 0 and not job.recompiles


def test_run_lists_compile_jobs_that_never_compiled(tmp_path: Path) -> None:
    from kerneltracer.analysis.compile_health.fleet import run_health
    from tests.report.runs import make_run, status

    reason = "UsageError: unknown torch.compile backend 'nope' (valid: eager, inductor)"
    log = {"path": "torch_trace/t.log", "kind": "torch_trace_log", "size": 1, "sha256": "0"}
    run = make_run(
        tmp_path / "run",
        {
            "bad/torch_compile": status("bad/torch_compile", "bad", "failed", reason=reason),
            "gen/torch_compile": status("gen/torch_compile", "gen", "unsupported", reason="no"),
            "ok/torch_compile": status("ok/torch_compile", "ok", outputs=[log]),
            "ok/torch_dispatch": status("ok/torch_dispatch", "ok"),
        },
    )
    (run / "jobs/ok/torch_compile/torch_trace").mkdir(parents=True)
    write_log(run / "jobs/ok/torch_compile/torch_trace/t.log", SynthModel("ok"))
    fleet = run_health(run)
    jobs = {j.job: j for j in fleet.jobs}
    assert set(jobs) == {"bad/torch_compile", "gen/torch_compile", "ok/torch_compile"}
    assert (jobs["bad/torch_compile"].compile_status, jobs["bad/torch_compile"].fail_type) == (
        "failed",
        "UsageError",
    )
    assert jobs["gen/torch_compile"].compile_status == "not_run"
    assert fleet.summary()["pass_rate"] == 0.5  # not_run is not counted


def test_an_intermediate_reads_like_its_log(tmp_path: Path) -> None:
    from kerneltracer.analysis.structured_logs import parse

    log = write_log(tmp_path / "m.log", SynthModel("m", frames=3, recompiles=2), seed=3)
    parse(log, tmp_path / "inter")
    by_log, by_inter = logs_health([log, tmp_path / "inter"]).jobs
    skip = {"model", "job"}
    assert {k: v for k, v in by_log.row().items() if k not in skip} == {
        k: v for k, v in by_inter.row().items() if k not in skip
    }
    rendered = logs_health([tmp_path]).jobs[0]  # a dir of logs: here m.log, read like it
    assert rendered.counts["graphs"] == by_log.counts["graphs"]


def test_recompile_reasons_keep_their_user_stack_lines() -> None:
    from kerneltracer.analysis.compile_health.breaks import recompile_reason_lines

    payload = (
        "0/0: ___check_obj_id(func.__code__, 1404), type=<class 'code'>  # generic.py:943\n"
        "User stack trace:\n"
        '  File "/v/transformers/utils/generic.py", line 943, in wrapper\n'
        "    output = func(self, *args, **kwargs)\n"
        "0/1: tensor 'x' size mismatch at index 0. expected 2, actual 3"
    )
    entries = recompile_reason_lines(payload)
    assert len(entries) == 2
    assert entries[0].startswith("0/0: ___check_obj_id") and "line 943" in entries[0]
    assert recompile_key(entries[0]).startswith("___check_obj_id(func.__code__, N)")
