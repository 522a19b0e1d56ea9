"""Side by side with the real tlparse 0.4.3: compile ids, artifact names, failure counters."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kerneltracer.analysis.structured_logs import parse, run
from tests.structured_logs.helpers import LOGS, artifact_names, run_tlparse


@pytest.fixture(scope="module")
def tl_dir(testdata_dir: Path) -> Path:
    return testdata_dir / "tlparse"


@pytest.mark.parametrize("name", LOGS)
def test_compile_directory_matches_tlparse(name: str, tl_dir: Path, tmp_path: Path) -> None:
    log = tl_dir / name
    run_tlparse(log, tmp_path / "tlparse")
    run(log, tmp_path / "ours")
    theirs = artifact_names(tmp_path / "tlparse" / "compile_directory.json")
    ours = artifact_names(tmp_path / "ours" / "compile_directory.json")
    assert set(ours) == set(theirs)
    assert ours == theirs
    for cid, names in ours.items():
        for a in names:
            if not a.startswith("http") and "." in a:
                assert any(p.name == a for p in (tmp_path / "ours").rglob(a)), (
                    f"{cid}: {a} not written"
                )


def test_multi_rank_matches_tlparse_per_rank(tl_dir: Path, tmp_path: Path) -> None:
    run_tlparse(tl_dir / "multi_rank_logs", tmp_path / "tlparse", "--all-ranks-html")
    run(tl_dir / "multi_rank_logs", tmp_path / "ours")
    for rank in range(4):
        theirs = artifact_names(tmp_path / "tlparse" / f"rank_{rank}" / "compile_directory.json")
        ours = artifact_names(tmp_path / "ours" / f"rank_{rank}" / "compile_directory.json")
        assert ours == theirs, f"rank {rank}"
    index = (tmp_path / "ours" / "index.html").read_text()
    assert "Only some ranks failed" in index  # ranks 0 and 2 fail, 1 and 3 do not
    assert "Ranks compiled different graphs" in index  # rank 1 recompiles 15 times


@pytest.mark.parametrize(
    ("name", "failures"),
    [
        ("simple.log", {}),
        ("simple_corrupted_json.log", {"fail_payload_md5": 1}),
        ("comp_metrics.log", {}),
        ("export.log", {"fail_payload_md5": 1}),
        ("cache_hit_miss.log", {}),
    ],
)
def test_failure_counters(
    name: str, failures: dict[str, int], tl_dir: Path, tmp_path: Path
) -> None:
    stats = parse(tl_dir / name, tmp_path / "inter").stats
    counted = {k: getattr(stats, k) for k in stats.FAILURE_KINDS if getattr(stats, k)}
    assert counted == failures


@pytest.mark.parametrize(("name", "lines"), [("simple.log", 15), ("comp_metrics.log", 13)])
def test_raw_jsonl_line_counts(name: str, lines: int, tl_dir: Path, tmp_path: Path) -> None:
    parse(tl_dir / name, tmp_path / "inter")
    raw = (tmp_path / "inter" / "raw.jsonl").read_bytes().splitlines()
    assert len(raw) == lines
    assert raw[0].startswith(b'{"string_table":')


def test_simple_log_outputs_tlparse_expects(tl_dir: Path, tmp_path: Path) -> None:
    run(tl_dir / "simple.log", tmp_path / "out")
    out = tmp_path / "out"
    for prefix in (
        "aot_forward_graph",
        "dynamo_output_graph",
        "inductor_post_grad_graph",
        "inductor_output_code",
    ):
        assert list((out / "-_0_0_0").glob(f"{prefix}*")), prefix
    for f in ("index.html", "compile_directory.json", "failures_and_restarts.html", "raw.jsonl"):
        assert (out / f).is_file(), f


def test_failures_page_names_the_backend_failure(tl_dir: Path, tmp_path: Path) -> None:
    run(tl_dir / "comp_failure.log", tmp_path / "out")
    page = (tmp_path / "out" / "failures_and_restarts.html").read_text()
    assert "BackendCompilerFailed" in page


@pytest.mark.parametrize(
    "name", ["comp_metrics.log", "comp_failure.log", "simple.log", "cache_hit_miss.log"]
)
def test_stack_trie_status_matches_tlparse(name: str, tl_dir: Path, tmp_path: Path) -> None:
    pattern = re.compile(r"class='(status-[a-z]+)'>(\[[^<]*\])")
    run_tlparse(tl_dir / name, tmp_path / "tlparse")
    run(tl_dir / name, tmp_path / "ours")
    theirs = sorted(pattern.findall((tmp_path / "tlparse" / "index.html").read_text()))
    ours = sorted(pattern.findall((tmp_path / "ours" / "index.html").read_text()))
    assert theirs and ours == theirs


@pytest.mark.parametrize("name", LOGS)
def test_every_tlparse_output_file_exists(name: str, tl_dir: Path, tmp_path: Path) -> None:
    """Same report tree; only payloads/ (inlined in our intermediate) and raw.log differ."""
    run_tlparse(tl_dir / name, tmp_path / "tlparse")
    run(tl_dir / name, tmp_path / "ours")
    theirs = {
        p.relative_to(tmp_path / "tlparse").as_posix() for p in (tmp_path / "tlparse").rglob("*")
    }
    ours = {p.relative_to(tmp_path / "ours").as_posix() for p in (tmp_path / "ours").rglob("*")}
    missing = {p for p in theirs - ours if not p.startswith("payloads") and p != "raw.log"}
    assert not missing
