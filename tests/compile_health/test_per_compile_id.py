"""Issue 37, compile health: per compile id, pass / partial / fail apart, restarts and the
time before them, the JSON's lists beside (not over) its counts, resume functions linked
to the breaks that made them, a skipped function's real break type, whole reasons."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from kerneltracer.analysis.compile_health.breaks import parse_break
from kerneltracer.analysis.compile_health.export import TABLE_COLUMNS, write_fleet
from kerneltracer.analysis.compile_health.fleet import FleetHealth, logs_health, run_health
from kerneltracer.analysis.compile_health.health import job_health
from kerneltracer.analysis.compile_health.sources import read_sources
from kerneltracer.core.jobspec import JobFile, JobSpec, ModelRef
from kerneltracer.core.layout import JobPaths
from tests.report.runs import make_run, status
from tests.support.compile_logs import SynthModel, write_log

# What torch 2.13 logs when Dynamo cannot resume after a break inside a `with` block and
# skips the whole function (symbolic_convert.py's "Failed to handle graph break gracefully").
SKIPPED = """\
Graph break in user code at /work/m/modeling.py:21
Graph Break Reason: Failed to handle graph break gracefully. Skipping the function and \
falling back to eager. Graph break encountered:

Unsupported context manager
  Explanation: Dynamo does not know how to enter a `Lock` context manager.
  Hint: Avoid using the unsupported context manager.
  Hint: If the context manager seems like it should be supported (e.g. torch.set_grad_enabled), \
then
    it may be the case that it was created outside the compiled region.

  Developer debug context: Attempted SETUP_WITH/BEFORE_WITH on Lock

 For more details about this graph break, please visit: \
https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0142.html

User code traceback:
  File "/work/m/modeling.py", line 21, in forward
    with self.lock:
"""


def test_skipped_function_break_has_its_real_type_explanation_hints_and_link() -> None:
    b = parse_break(SKIPPED)
    assert (b.gb_id, b.gb_type) == ("GB0142", "Unsupported context manager")
    assert b.skipped_function
    assert b.explanation == "Dynamo does not know how to enter a `Lock` context manager."
    assert b.hints[0] == "Avoid using the unsupported context manager."
    assert b.hints[1].endswith(
        "it may be the case that it was created outside the compiled region."
    )
    assert b.url == "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0142.html"
    assert (b.frame, b.code) == ("/work/m/modeling.py:21", "with self.lock:")


def _fleet(*jobs: tuple[str, str]) -> FleetHealth:
    fleet = FleetHealth("synthetic")
    for name, state in jobs:
        job = job_health(name, name, [], [])
        job.compile_status = state
        fleet.jobs.append(job)
    return fleet


def test_partial_is_not_a_pass_synthetic() -> None:
    s = _fleet(("a", "ok"), ("b", "partial"), ("c", "partial"), ("d", "failed")).summary()
    assert s["outcome_counts"] == {"pass": 1, "partial": 2, "fail": 1}
    assert (s["pass_rate"], s["partial_rate"], s["fail_rate"]) == (0.25, 0.5, 0.25)


def test_partial_is_not_a_pass_on_a_real_failed_frame(testdata_dir: Path) -> None:
    # comp_failure.log: a frame failed (BackendCompilerFailed) in a job that ran anyway.
    logs, problems = read_sources(testdata_dir / "tlparse" / "comp_failure.log")
    fleet = FleetHealth("t", [job_health("m", "m", logs, problems, job_status="ok")])
    s = fleet.summary()
    assert fleet.jobs[0].compile_status == "partial"
    assert s["outcome_counts"] == {"pass": 0, "partial": 1, "fail": 0}
    assert s["pass_rate"] == 0.0 and s["partial_rate"] == 1.0


def _all_logs(testdata_dir: Path) -> list[Path]:
    root = testdata_dir / "tlparse"
    return [*sorted(p for p in root.iterdir() if p.is_file()), root / "multi_rank_logs"]


def test_json_lists_never_hide_a_column_of_the_row(testdata_dir: Path, tmp_path: Path) -> None:
    write_fleet(logs_health(_all_logs(testdata_dir)), tmp_path)
    doc = json.loads((tmp_path / "compile_health.json").read_text())
    with open(tmp_path / "compile_health.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert doc["schema_version"] == 2
    for job, row in zip(doc["jobs"], rows, strict=True):
        for col in TABLE_COLUMNS:
            value = job[col]
            if col == "options":  # the same options, as a mapping
                value = ",".join(f"{k}={v}" for k, v in sorted(value.items()))
            shown = "" if value is None else str(value)
            assert shown == row[col], (job["job"], col)
    metrics = next(j for j in doc["jobs"] if j["job"].endswith("multi_rank_logs"))
    assert isinstance(metrics["recompiles"], int)
    assert metrics["recompiles"] > 0 and metrics["recompile_list"]


def test_restarts_failed_frames_and_dynamo_time_before_restart(
    testdata_dir: Path, tmp_path: Path
) -> None:
    log = testdata_dir / "tlparse" / "comp_metrics.log"
    fleet = logs_health([log])
    write_fleet(fleet, tmp_path)
    # comp_metrics.log's compilation_metrics: 0.006658… + 0.002626… + 0.0 s before restart
    expected = 0.006658077239990234 + 0.002626180648803711
    row = fleet.jobs[0].row()
    assert row["dynamo_before_restart_s"] == pytest.approx(expected, abs=1e-6)
    assert row["restarts"] > 0
    with open(tmp_path / "compile_health.csv", newline="") as fh:
        assert float(next(csv.DictReader(fh))["dynamo_before_restart_s"]) == pytest.approx(
            expected, abs=1e-6
        )
    page = (tmp_path / "compile_health.html").read_text()
    for header in ("<th>restarts</th>", "<th>failed frames</th>", "dynamo before restart"):
        assert header in page


def test_per_compile_id_rows_on_real_logs(testdata_dir: Path) -> None:
    (job,) = logs_health([testdata_dir / "tlparse" / "comp_metrics.log"]).jobs
    by_id = {c.compile_id: c for c in job.compiles}
    assert list(by_id) == ["[0/0]", "[0/0_1]", "[1/0]", "[1/0_1]", "[2/0]"]
    # [0/0] restarted: its metrics are its last attempt's, which name the function
    assert by_id["[0/0]"].status == "restarted" and by_id["[0/0]"].function == "fn"
    assert by_id["[0/0_1]"].status == "ok" and by_id["[0/0_1]"].restart_reasons
    resumed = by_id["[1/0_1]"]
    assert resumed.function == "fn (resumed at line 9551)"
    assert resumed.frame is not None and resumed.frame.endswith("test_misc.py:9551")
    total = sum(c.total_s or 0.0 for c in job.compiles)
    assert total == pytest.approx(job.times["total"], abs=1e-5)

    (failed,) = logs_health([testdata_dir / "tlparse" / "comp_failure.log"]).jobs
    fails = [c for c in failed.compiles if c.status == "failed"]
    assert fails and fails[0].fail_type == "BackendCompilerFailed"


def test_resume_function_recompiles_name_their_break(tmp_path: Path) -> None:
    log = write_log(tmp_path / "m.log", SynthModel("m", frames=3, recompiles=1))
    fleet = logs_health([log])
    (job,) = fleet.jobs
    rows = {r.compile_id: r for r in job.recompiles}
    assert rows["[0/1]"].function == "forward" and rows["[0/1]"].after_breaks == []
    # frame 1 is forward's rest after the break of frame 0 (line 10, GB0170)
    assert rows["[1/1]"].function == "forward (resumed at line 10)"
    assert rows["[1/1]"].frame is not None and rows["[1/1]"].frame.endswith("m.py:10")
    assert rows["[1/1]"].after_breaks == ["GB0170"]
    assert rows["[2/1]"].after_breaks == ["GB0059"]
    (top,) = fleet.summary()["top_recompile_reasons"]
    assert (top["recompiles"], top["resume_functions"]) == (3, 2)
    assert top["after_breaks"] == ["GB0059", "GB0170"]


def test_failure_reason_is_kept_whole(testdata_dir: Path, tmp_path: Path) -> None:
    text = (testdata_dir / "tlparse" / "comp_failure.log").read_text()
    log = tmp_path / "long.log"
    long_reason = "broken backend " + " ".join(f"word{i}" for i in range(200))
    lines = text.splitlines(keepends=True)
    log.write_text(
        "".join(
            line.replace("broken backend", long_reason) if "compilation_metrics" in line else line
            for line in lines
        )
    )
    fleet = logs_health([log])
    write_fleet(fleet, tmp_path / "out")
    (job,) = fleet.jobs
    assert job.fail_reason is not None and "word199" in job.fail_reason
    with open(tmp_path / "out" / "compile_health.csv", newline="") as fh:
        assert "word199" in next(csv.DictReader(fh))["fail_reason"]
    assert "word199" in (tmp_path / "out" / "compile_health.html").read_text()


def test_page_shows_each_break_explanation_and_site(tmp_path: Path) -> None:
    log = write_log(tmp_path / "m.log", SynthModel("m", frames=2, recompiles=0))
    write_fleet(logs_health([log]), tmp_path / "out")
    page = (tmp_path / "out" / "compile_health.html").read_text()
    assert "graph-break site: <code>https://meta-pytorch.github.io/" in page
    assert "gb/gb0170.html" in page and "<br>synthetic" in page  # the explanation


def test_remote_code_frames_point_at_the_model_dir(tmp_path: Path) -> None:
    model_dir = tmp_path / "models" / "my-remote"
    model_dir.mkdir(parents=True)
    (model_dir / "modeling_my.py").write_text("# the user's file\n")
    # transformers' copy: modules/transformers_modules/<name>/<hash>/<file>
    cache = tmp_path / "hf" / "modules" / "transformers_modules" / "my_remote" / "0a1b2c"
    cache.mkdir(parents=True)
    (cache / "modeling_my.py").write_text("# the user's file\n")
    src = str(cache / "modeling_my.py")
    log_bytes = write_log(
        tmp_path / "t.log", SynthModel("m", frames=2, recompiles=1, src=src)
    ).read_bytes()
    log = {"path": "torch_trace/t.log", "kind": "torch_trace_log", "size": 1, "sha256": "0"}
    run = make_run(
        tmp_path / "run", {"m/torch_compile": status("m/torch_compile", "m", outputs=[log])}
    )
    job_dir = run / "jobs" / "m" / "torch_compile"
    (job_dir / "torch_trace").mkdir()
    (job_dir / "torch_trace" / "t.log").write_bytes(log_bytes)
    model = ModelRef(display="m", slug="m", path=str(model_dir))
    spec = JobSpec(
        key="m/torch_compile",
        model=model,
        tracer="torch_compile",
        tracer_version="1",
        exclusive_group=None,
        framework="huggingface",
        mode="eval",
        device="cpu",
        dtype="float32",
        batch_size=1,
        seq_len=8,
        options={},
        timeout_s=60.0,
        max_rss_gb=None,
    )
    JobFile(attempt="a", job=spec).write(JobPaths(job_dir).job_file)
    (job,) = run_health(run).jobs
    want = str(model_dir / "modeling_my.py")
    assert job.breaks and all(b.frame == f"{want}:10" for b in job.breaks)
    assert {r.frame for r in job.recompiles} == {f"{want}:10"}
    assert all(c.frame is not None and c.frame.startswith(want) for c in job.compiles)
    # Without a model dir (a log handed over), the frame stays where Dynamo saw it.
    (bare,) = logs_health([job_dir / "torch_trace" / "t.log"]).jobs
    assert bare.breaks[0].frame == f"{src}:10"


def test_compile_ids_csv_and_api_have_one_row_per_compile_id(
    testdata_dir: Path, tmp_path: Path
) -> None:
    from kerneltracer.api import compile_health

    log = testdata_dir / "tlparse" / "comp_metrics.log"
    write_fleet(logs_health([log]), tmp_path)
    with open(tmp_path / "compile_ids.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["compile_id"] for r in rows] == ["[0/0]", "[0/0_1]", "[1/0]", "[1/0_1]", "[2/0]"]
    assert rows[3]["function"] == "fn (resumed at line 9551)"
    with open(tmp_path / "compile_health.csv", newline="") as fh:
        job_time = float(next(csv.DictReader(fh))["compile_time_s"])
    assert sum(float(r["compile_time_s"] or 0) for r in rows) == pytest.approx(job_time, abs=1e-5)
    frame = compile_health([log]).compile_ids
    assert list(frame["compile_id"]) == [r["compile_id"] for r in rows]


def test_each_compile_id_links_its_graph_guards_and_output_code(
    testdata_dir: Path, tmp_path: Path
) -> None:
    """tlparse's compile directory, per compile id: the graph, the guards and the code
    Inductor wrote, as files the page links (relative, so the report embeds them too)."""
    from kerneltracer.analysis.structured_logs.api import parse

    log = testdata_dir / "tlparse" / "simple.log"
    fleet = logs_health([log])
    (c,) = fleet.jobs[0].compiles
    assert sorted(c.files) == ["graph", "guards", "output_code"]
    out = tmp_path / "out"
    write_fleet(fleet, out)
    inter = tmp_path / "inter"
    parse(log, inter)
    payloads = {
        kind: json.loads((inter / "by_type" / f"{etype}.jsonl").read_text().splitlines()[0])[
            "payload"]
        for etype, kind in (("dynamo_output_graph", "graph"), ("dynamo_cpp_guards_str", "guards"),
                            ("inductor_output_code", "output_code"))
    }  # fmt: skip
    for kind, rel in c.files.items():
        assert (out / rel).read_text() == payloads[kind]
    page = (out / "compile_health.html").read_text()
    for rel in c.files.values():
        assert f'href="{rel}"' in page
    document = json.loads((out / "compile_health.json").read_text())
    assert document["jobs"][0]["compile_list"][0]["files"] == c.files
    # Another log in the same folder: the first one's texts do not stay to pass for its own.
    write_fleet(logs_health([testdata_dir / "tlparse" / "comp_metrics.log"]), out)
    assert not any((out / rel).exists() for rel in c.files.values())


def test_texts_stay_within_the_fleets_budget(
    testdata_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kerneltracer.analysis.compile_health import fleet as fleet_module
    from kerneltracer.analysis.compile_health.records import MAX_TEXT_BYTES, TextBudget

    budget = TextBudget(left=10)
    logs, _ = read_sources(testdata_dir / "tlparse" / "simple.log", budget)
    assert budget.dropped == 3 and not any(r.texts for log in logs for r in log.records)
    # A fleet past its budget says how many texts it did not keep, and links none of them.
    monkeypatch.setattr(fleet_module, "TextBudget", lambda: TextBudget(left=10))
    fleet = logs_health([testdata_dir / "tlparse" / "simple.log"])
    assert fleet.texts_not_kept == 3 and fleet.summary()["texts_not_kept"] == 3
    write_fleet(fleet, tmp_path)
    page = (tmp_path / "compile_health.html").read_text()
    assert "3 graph / guard / code text(s) are not linked" in page
    assert "compile_ids/" not in page
    big = TextBudget()
    kept = big.take("x" * (MAX_TEXT_BYTES + 5))
    assert kept is not None and kept.startswith("x" * MAX_TEXT_BYTES) and "cut at" in kept
    assert big.left == TextBudget().left - len(kept)
