"""The analysis record: writer → reader, the reader on older and broken files, the states."""

from __future__ import annotations

import typing
from pathlib import Path

import orjson
import pytest

from kerneltracer.analysis.isolation import Died
from kerneltracer.analysis.runner import UNCHANGED, AnalysisOutcome
from kerneltracer.core.analysis_record import (
    AnalysisProblem,
    AnalysisRecord,
    AnalysisState,
    analysis_names,
    read_analysis_record,
    record_files,
    write_analysis_record,
)
from kerneltracer.core.layout import AnalysisPaths, JobPaths


def _paths(tmp_path: Path, name: str = "timeline") -> AnalysisPaths:
    return JobPaths(tmp_path / "jobs" / "m" / "torch_profiler").analysis(name)


def _raw(paths: AnalysisPaths, data: bytes) -> None:
    paths.dir.mkdir(parents=True, exist_ok=True)
    paths.record.write_bytes(data)


def test_a_done_record_reads_back_as_written(tmp_path: Path) -> None:
    paths = _paths(tmp_path)
    record = AnalysisRecord(
        state=AnalysisState.DONE,
        analysis="timeline",
        version="2",
        status_sha256="ab" * 32,
        files=["index.html", "t0/ops.csv"],
    )
    written = write_analysis_record(paths, record)
    assert written == record  # no log: none was written
    assert read_analysis_record(paths) == record
    assert orjson.loads(paths.record.read_bytes())["schema_version"] == 1


def test_the_log_is_named_only_when_it_holds_something(tmp_path: Path) -> None:
    kept, empty = _paths(tmp_path, "records"), _paths(tmp_path, "timeline")
    for paths in (kept, empty):
        paths.dir.mkdir(parents=True)
    kept.log.write_text("Traceback ...\n")
    empty.log.write_text("")
    failed = AnalysisRecord(state=AnalysisState.FAILED, error="ValueError: x", traceback="tb")
    assert write_analysis_record(kept, failed).log is not None
    assert write_analysis_record(empty, failed).log is None
    assert kept.log.is_file() and not empty.log.exists()
    back = read_analysis_record(kept)
    assert isinstance(back, AnalysisRecord) and back.log is not None
    assert kept.dir / back.log == kept.log
    assert (back.state, back.error, back.traceback) == (AnalysisState.FAILED, "ValueError: x", "tb")


def test_the_writer_makes_the_folder_of_an_analysis_that_died_before_it(tmp_path: Path) -> None:
    paths = _paths(tmp_path)
    write_analysis_record(paths, AnalysisRecord(state=AnalysisState.CRASHED, error="SIGSEGV"))
    assert analysis_names(paths.dir.parent.parent) == ["timeline"]


def test_a_record_from_before_the_schema_still_reads(tmp_path: Path) -> None:
    # What older runners and hand-made dirs hold: no schema_version, no stamp, odd values.
    paths = _paths(tmp_path)
    old = {"state": "done", "files": ["a.html", 3, None], "error": 7, "extra": {"k": 1}}
    _raw(paths, orjson.dumps(old))
    record = read_analysis_record(paths)
    assert isinstance(record, AnalysisRecord)
    assert record.files == ["a.html"] and record.error is None and record.analysis is None
    assert record.model_extra == {"extra": {"k": 1}}  # a newer writer's field survives
    assert not record.same_inputs("timeline", "2", "ab")  # no stamp: never unchanged


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (None, "no analysis record"),
        (b'{"state": "do', "not valid JSON"),
        (b"", "not valid JSON"),
        (b"\x00\x00\x00\x00", "not valid JSON"),
        (b'["done"]', "not a JSON object"),
        (b'{"files": []}', "no known state (None; valid: done, failed, timeout"),
        (b'{"state": "exploded"}', "no known state ('exploded'"),
        (b'{"state": ["done"]}', "no known state"),
        (b'{"schema_version": 2, "state": "done"}', "another schema (2)"),
    ],
)
def test_a_record_that_cannot_be_used_is_a_problem_naming_why(
    tmp_path: Path, data: bytes | None, reason: str
) -> None:
    paths = _paths(tmp_path)
    paths.dir.mkdir(parents=True)
    if data is not None:
        paths.record.write_bytes(data)
    problem = read_analysis_record(paths)
    assert isinstance(problem, AnalysisProblem) and reason in problem.reason, problem


def test_a_directory_in_place_of_the_record_is_a_problem(tmp_path: Path) -> None:
    paths = _paths(tmp_path)
    paths.record.mkdir(parents=True)
    problem = read_analysis_record(paths)
    assert isinstance(problem, AnalysisProblem) and "unreadable" in problem.reason


def test_listed_files_are_those_inside_the_folder_older_paths_recovered(tmp_path: Path) -> None:
    paths = _paths(tmp_path, "fx_redundancy")
    (paths.dir / "sub").mkdir(parents=True)
    for rel in ("r.json", "r.txt", "sub/p.html"):
        (paths.dir / rel).write_text("x")
    (paths.dir.parent.parent / "JOB.json").write_text("{}")
    listed = [
        "sub/p.html",
        "runs/demo/jobs/m/print_fx/analysis/fx_redundancy/r.json",  # another cwd
        str(paths.dir / "r.txt"),  # absolute
        "../../JOB.json",  # escapes
        "gone.html",
    ]
    record = AnalysisRecord(state=AnalysisState.DONE, files=listed)
    assert record_files(paths, record) == ("r.json", "r.txt", "sub/p.html")


def test_paths_relative_to_the_job_dir_are_what_links_use(tmp_path: Path) -> None:
    paths = _paths(tmp_path, "structured_logs")
    assert paths.dir.parent.parent / paths.relative == paths.dir
    assert paths.record.parent == paths.log.parent == paths.dir
    assert analysis_names(tmp_path / "nowhere") == []


def test_every_way_an_isolated_analysis_dies_is_a_recorded_state() -> None:
    died = typing.get_args(typing.get_type_hints(Died)["state"])
    assert {AnalysisState(s) for s in died} == {
        AnalysisState.TIMEOUT,
        AnalysisState.CRASHED,
        AnalysisState.INTERRUPTED,
    }


def test_failed_states_are_those_that_make_analyze_exit_1() -> None:
    failed = {s for s in AnalysisState if s.failed}
    assert failed == {AnalysisState.FAILED, AnalysisState.TIMEOUT, AnalysisState.CRASHED}
    assert not AnalysisOutcome("k", "a", UNCHANGED).failed
    assert AnalysisOutcome("k", "a", AnalysisState.TIMEOUT).failed
    assert f"{AnalysisState.DONE:<6}|" == "done  |"  # the CLI's column shows the value
