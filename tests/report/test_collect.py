"""Reading run dirs: runs in progress, corrupt status files, analyses present or not."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

from kerneltracer.errors import RunDirError
from kerneltracer.report import build_report
from kerneltracer.report.collect import PENDING, UNREADABLE, collect_run
from tests.report.runs import add_analysis, make_run, status


def test_run_in_progress_shows_pending_jobs(tmp_path: Path) -> None:
    run = make_run(
        tmp_path / "run",
        {"m/torch_dispatch": status("m/torch_dispatch", "org/m"), "m/torch_profiler": None},
        finished=False,
    )
    data = collect_run(run)
    assert data.in_progress and data.finished_at is None
    assert {j.column: j.status for j in data.jobs} == {
        "torch_dispatch": "ok",
        "torch_profiler": PENDING,
    }
    assert data.counts == {"ok": 1, PENDING: 1}
    row = data.models[0]
    assert row.display == "org/m"  # from the status file, not the manifest's slug-ish name
    assert row.worst == PENDING


def test_corrupt_and_foreign_status_files_are_unreadable_not_fatal(tmp_path: Path) -> None:
    run = make_run(
        tmp_path / "run",
        {
            "a/torch_dispatch": b'{"schema_version": 1, "stat',
            "b/torch_dispatch": status("b/torch_dispatch", "b", status="exploded"),
            "c/torch_dispatch": status("c/torch_dispatch", "c", schema_version=7),
            "d/torch_dispatch": status("d/torch_dispatch", "d"),
        },
    )
    jobs = {j.slug: j for j in collect_run(run).jobs}
    assert jobs["a"].status == UNREADABLE and "not valid JSON" in (jobs["a"].reason or "")
    assert jobs["b"].status == UNREADABLE and "schema" in (jobs["b"].reason or "")
    assert jobs["c"].status == UNREADABLE
    assert jobs["d"].status == "ok"


def test_jobs_found_on_disk_but_not_in_manifest_are_reported(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", {"a/torch_dispatch": status("a/torch_dispatch", "a")})
    extra = run / "jobs" / "b" / "print_fx"
    extra.mkdir(parents=True)
    (extra / "JOB.json").write_text("{}")
    assert {j.key: j.status for j in collect_run(run).jobs} == {
        "a/torch_dispatch": "ok",
        "b/print_fx": PENDING,
    }


def test_job_without_analyses_and_failed_or_missing_markers(tmp_path: Path) -> None:
    run = make_run(
        tmp_path / "run",
        {
            "m/torch_profiler": status("m/torch_profiler", "m"),
            "n/torch_profiler": status("n/torch_profiler", "n"),
        },
    )
    job_dir = run / "jobs" / "m" / "torch_profiler"
    add_analysis(job_dir, "timeline", {"state": "failed", "error": "ValueError: bad trace"}, {})
    add_analysis(job_dir, "records", None, {"partial.csv": "x"})  # interrupted: no marker
    add_analysis(
        job_dir,
        "structured_logs",
        {
            "state": "done",
            "files": ["index.html", "sub/page.html", "../../../JOB.json", "gone.html"],
        },
        {"index.html": "<p>", "sub/page.html": "<p>"},
    )
    jobs = {j.slug: j for j in collect_run(run).jobs}
    assert jobs["n"].analyses == ()
    by_name = {a.name: a for a in jobs["m"].analyses}
    assert (
        by_name["timeline"].state == "failed"
        and by_name["timeline"].error == "ValueError: bad trace"
    )
    assert by_name["records"].state == "unreadable" and by_name["records"].files == ()
    logs = by_name["structured_logs"]
    # Escaping and missing paths are dropped; what remains exists inside the analysis dir.
    assert logs.files == ("index.html", "sub/page.html") and logs.main_file == "index.html"


def test_marker_paths_written_relative_to_another_cwd_are_recovered(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", {"m/print_fx": status("m/print_fx", "m")})
    job_dir = run / "jobs" / "m" / "print_fx"
    listed = [
        "runs/demo/jobs/m/print_fx/analysis/fx_redundancy/fx_redundancy.json",
        str(job_dir / "analysis" / "fx_redundancy" / "fx_redundancy.txt"),
    ]
    add_analysis(
        job_dir,
        "fx_redundancy",
        {"state": "done", "files": listed},
        {"fx_redundancy.json": "{}", "fx_redundancy.txt": "x"},
    )
    (analysis,) = collect_run(run).jobs[0].analyses
    assert analysis.files == ("fx_redundancy.json", "fx_redundancy.txt")


def test_status_outputs_that_escape_the_job_dir_are_not_linked(tmp_path: Path) -> None:
    outs = [
        {"path": p, "size": 1, "sha256": "0", "mtime_ns": 0}
        for p in ("ok.csv", "../../../../etc/passwd", "/etc/passwd", "graphs/graph_0.txt")
    ]
    run = make_run(tmp_path / "run", {"m/print_fx": status("m/print_fx", "m", outputs=outs)})
    job = collect_run(run).jobs[0]
    assert [f.path for f in job.files] == ["ok.csv"]
    assert [f.path for f in job.graphs] == ["graphs/graph_0.txt"]


def test_missing_or_foreign_run_dir_raises_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(RunDirError, match="does not exist"):
        collect_run(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(RunDirError, match="not a kerneltracer run dir"):
        collect_run(tmp_path / "empty")


def test_versions_of_a_mixed_run_are_all_listed(tmp_path: Path) -> None:
    run = make_run(
        tmp_path / "run",
        {
            "a/torch_dispatch": status("a/torch_dispatch", "a", versions={"torch": "2.12"}),
            "b/torch_dispatch": status(
                "b/torch_dispatch", "b", versions={"torch": "2.13", "vllm": None}
            ),
        },
    )
    assert collect_run(run).versions == {"torch": ["2.12", "2.13"]}


def test_damaged_manifests_fall_back_to_the_job_dirs(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", {"a/torch_dispatch": status("a/torch_dispatch", "a")})
    for damaged in (b'{"jobs": 5, "finished_at": 3}', b"[1, 2]", b"{not json"):
        (run / "run.json").write_bytes(damaged)
        data = collect_run(run)
        assert [(j.key, j.status) for j in data.jobs] == [("a/torch_dispatch", "ok")]


def test_unfinished_run_whose_orchestrator_is_gone_is_not_in_progress(tmp_path: Path) -> None:
    import json
    import os
    import socket
    import subprocess
    import sys

    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    host = socket.gethostname()
    cases = {
        "killed": ({"pid": int(dead.stdout), "host": host}, False, True),
        "running": ({"pid": os.getpid(), "host": host}, True, False),
        "elsewhere": ({"pid": int(dead.stdout), "host": host + "-other"}, True, False),
        "old": (None, True, False),  # manifests from before the field: cannot tell
    }
    for name, (who, in_progress, abandoned) in cases.items():
        run = make_run(tmp_path / name, {"m/torch_dispatch": None}, finished=False)
        manifest = json.loads((run / "run.json").read_text())
        if who is not None:
            manifest["orchestrator"] = who
        (run / "run.json").write_text(json.dumps(manifest))
        data = collect_run(run)
        assert (data.in_progress, data.abandoned) == (in_progress, abandoned), name


def test_report_links_reach_each_analysis_file_and_show_its_state(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", {"m/torch_profiler": status("m/torch_profiler", "m")})
    job_dir = run / "jobs" / "m" / "torch_profiler"
    files = {"index.html": "<p>", "t 0/ops.csv": "op"}
    add_analysis(job_dir, "timeline", {"state": "done", "files": list(files)}, files)
    add_analysis(job_dir, "records", {"state": "timeout", "error": "no result after 9 s"}, {})
    result = build_report(run)
    page = result.out_dir / "models" / "m.html"
    html = page.read_text()
    targets = {
        (page.parent / unquote(href)).resolve()
        for href in re.findall(r'href="([^"]*analysis/[^"]*)"', html)
    }
    assert targets == {(job_dir / "analysis" / "timeline" / f).resolve() for f in files}
    assert all(t.is_file() for t in targets)
    assert '<span class="badge s-ok">done</span>' in html
    assert '<span class="badge s-failed">timeout</span>' in html
    grid = result.index.read_text()
    (cell,) = re.findall(r'href="([^"]*analysis/timeline/index.html)"', grid)
    assert (result.index.parent / unquote(cell)).resolve() == (
        job_dir / "analysis" / "timeline" / "index.html"
    ).resolve()
