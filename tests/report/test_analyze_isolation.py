"""`kerneltracer analyze` isolates analyses: a hang, a crash or a memory blow-up in one is
recorded in its analysis record with the reason and log, the others finish, the exit status says so.

The run dir holds a real job (a tiny Llama traced by torch_profiler); the misbehaving
analyses come from tests/report/analysis_fixtures.py through ``--import``.
"""

from __future__ import annotations

import shutil
import signal
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from kerneltracer.core.analysis_record import (
    AnalysisRecord,
    AnalysisState,
    read_analysis_record,
)
from kerneltracer.core.layout import AnalysisPaths, JobPaths
from tests.helpers import kt, kt_popen, write_config

REPO = Path(__file__).resolve().parents[2]
FIXTURES = "tests.report.analysis_fixtures"
KEY = "tiny-llama/torch_profiler"


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory, tiny_models: dict[str, Path]) -> Path:
    root = tmp_path_factory.mktemp("isolation")
    cfg = write_config(
        root / "config.yaml",
        [{"path": str(tiny_models["tiny-llama"])}],
        defaults={"tracers": ["torch_profiler"], "seq_len": 8},
    )
    proc = kt("run", str(cfg), env=_env(root), cwd=REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return root / "run"


@pytest.fixture
def run_dir(real_run: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(real_run, tmp_path / "run"))


def _env(home: Path) -> dict[str, str]:
    from tests.conftest import clean_env

    return clean_env(home)


def _analyze(run_dir: Path, *args: str) -> Any:
    return kt("analyze", str(run_dir), "--import", FIXTURES, *args, env=_env(run_dir), cwd=REPO)


def _marker(run_dir: Path, name: str) -> AnalysisRecord:
    record = read_analysis_record(_paths(run_dir, name))
    assert isinstance(record, AnalysisRecord), record
    return record


def _paths(run_dir: Path, name: str) -> AnalysisPaths:
    return JobPaths(run_dir / "jobs" / KEY).analysis(name)


def _out(run_dir: Path, name: str) -> Path:
    return _paths(run_dir, name).dir


def test_hang_and_segfault_are_recorded_and_the_others_finish(run_dir: Path) -> None:
    only = ("--only", "records", "--only", "timeline", "--only", "hang", "--only", "segfault")
    # 25 s: room for the real timeline analysis on a loaded machine; the hang would
    # otherwise run into kt()'s own 600 s limit.
    proc = _analyze(run_dir, *only, "--timeout", "25", "--jobs", "2")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "4 analysis run(s), 2 failed" in proc.stdout

    hang = _marker(run_dir, "hang")
    assert hang.state is AnalysisState.TIMEOUT and "no result after 25 s" in str(hang.error)
    assert hang.log is not None
    log = _paths(run_dir, "hang").log.read_text()
    assert "hanging now" in log and "analysis_fixtures.py" in log  # where it hung
    helper = int((_out(run_dir, "hang") / "grandchild.pid").read_text())
    assert not _alive(helper), "the timed-out analysis's own child survived"

    crash = _marker(run_dir, "segfault")
    assert crash.state is AnalysisState.CRASHED and "SIGSEGV" in str(crash.error)
    assert crash.log is not None
    assert "Segmentation fault" in _paths(run_dir, "segfault").log.read_text()
    assert f"crashed   segfault         {KEY}  killed by SIGSEGV (-11) (log: " in proc.stderr

    for name in ("records", "timeline"):
        marker = _marker(run_dir, name)
        assert marker.state is AnalysisState.DONE and marker.files
        assert all((_out(run_dir, name) / f).stat().st_size > 0 for f in marker.files)

    again = _analyze(run_dir, "--only", "records", "--only", "timeline", "--only", "segfault")
    assert again.returncode == 1
    assert again.stderr.count("unchanged") == 2 and "crashed   segfault" in again.stderr


def test_memory_ceiling_fails_the_analysis_with_a_memory_reason(run_dir: Path) -> None:
    only = ("--only", "records", "--only", "hog", "--only", "exits")
    proc = _analyze(run_dir, *only, "--max-memory", "256M", "--jobs", "1")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    hog = _marker(run_dir, "hog")
    assert hog.state is AnalysisState.FAILED
    assert "out of memory" in str(hog.error) and "256 MiB" in str(hog.error)
    assert "MemoryError" in str(hog.traceback)
    exits = _marker(run_dir, "exits")
    assert exits.state is AnalysisState.FAILED and exits.error == "SystemExit: 3"
    assert _marker(run_dir, "records").state is AnalysisState.DONE
    assert "3 analysis run(s), 2 failed" in proc.stdout


def test_interrupt_kills_every_analysis_process(run_dir: Path) -> None:
    proc = kt_popen(
        "analyze",
        str(run_dir),
        "--import",
        FIXTURES,
        "--only",
        "hang",
        env={**_env(run_dir), "PYTHONPATH": str(REPO)},
    )
    pid_file = _out(run_dir, "hang") / "grandchild.pid"
    deadline = time.monotonic() + 120
    while not pid_file.is_file() or not pid_file.read_text():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.1)
    workers = psutil.Process(proc.pid).children(recursive=True)
    assert workers
    proc.send_signal(signal.SIGINT)
    assert proc.wait(30) == 130
    helper = int(pid_file.read_text())
    assert not _alive(helper)
    assert not [w for w in workers if _alive(w.pid)]


def test_bad_import_and_bad_size_are_usage_errors(run_dir: Path) -> None:
    missing = kt("analyze", str(run_dir), "--import", "no_such_module_kt", cwd=REPO)
    assert missing.returncode == 2
    assert "cannot import analysis module 'no_such_module_kt'" in missing.stderr
    clash = kt("analyze", str(run_dir), "--import", FIXTURES, "--import", FIXTURES, cwd=REPO)
    assert clash.returncode == 2 and "'hang'" in clash.stderr and "already defined" in clash.stderr
    size = kt("analyze", str(run_dir), "--max-memory", "lots", cwd=REPO)
    assert size.returncode == 2 and "is not a size" in size.stderr


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
