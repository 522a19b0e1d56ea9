"""`kerneltracer report` as a user runs it, and a 500 models x 6 tracers synthetic run."""

from __future__ import annotations

import re
from pathlib import Path

from kerneltracer.report import build_report
from tests.helpers import kt
from tests.report.runs import make_run, status
from tests.support.synthetic_run import SIX_TRACERS, make_synthetic_run


def test_cli_reports_a_run_and_prints_where(tmp_path: Path) -> None:
    run = make_run(
        tmp_path / "run",
        {"a/torch_dispatch": status("a/torch_dispatch", "a"), "a/torch_profiler": b"{"},
    )
    proc = kt("report", str(run))
    assert proc.returncode == 0, proc.stderr
    assert "1 models x 2 tracers: 1 ok, 1 unreadable" in proc.stdout
    assert f"report: {run / 'report' / 'index.html'}" in proc.stdout
    for name in ("index.html", "coverage.html", "models/a.html", "run_summary.json", "jobs.csv"):
        assert (run / "report" / name).is_file(), name
    assert (run / "report" / "coverage.parquet").is_file()


def test_cli_out_dir_and_errors_are_one_line(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", {"a/torch_dispatch": status("a/torch_dispatch", "a")})
    proc = kt("report", str(run), "--out", str(tmp_path / "out"))
    assert proc.returncode == 0 and (tmp_path / "out" / "index.html").is_file()
    missing = kt("report", str(tmp_path / "missing"))
    assert missing.returncode == 1
    assert missing.stderr.strip().splitlines() == [
        f"error: run dir {tmp_path / 'missing'} does not exist"
    ]
    (tmp_path / "empty").mkdir()
    empty = kt("report", str(tmp_path / "empty"))
    assert empty.returncode == 1 and "not a kerneltracer run dir" in empty.stderr
    assert "Traceback" not in empty.stderr


def test_500_models_x_6_tracers(tmp_path: Path) -> None:
    keys = make_synthetic_run(tmp_path / "run", n_models=500)
    assert len(keys) == 3000
    result = build_report(tmp_path / "run")
    index = result.index.read_text()
    tbody = index[index.index("<tbody>") : index.index("</tbody>")]
    rows = re.findall(r'<tr data-jobs="(\d+)">', tbody)
    assert len(rows) == 500
    # Every job is in the grid: in a cell of its own, or folded into its group's winner.
    assert sum(int(n) for n in rows) == 3000 == len(keys)
    cells = re.findall(r'<td class="s-[a-z]+" data-status="([a-z]+)"', tbody)
    assert len(cells) == 3000 - len(result.run.folded)
    assert {"ok", "failed", "oom", "timeout", "crashed", "pending", "unreadable"} <= set(cells)
    # The synthetic run's skipped jobs are all alternatives whose group another member won.
    assert result.run.folded and all(
        j.status == "skipped" for j in result.run.jobs if j.key in result.run.folded
    )
    assert len(list((result.out_dir / "models").glob("*.html"))) == 500
    assert result.run.columns == list(SIX_TRACERS)
    # Coverage sees every model's torch_dispatch table; 500 columns get the compact table.
    coverage = (result.out_dir / "coverage.html").read_text()
    assert "coverage_matrix.csv" in coverage and "aten.custom_499.default" in coverage
    assert not result.warnings
