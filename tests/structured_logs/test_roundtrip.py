"""parse → render gives exactly the files the one-step command writes (real CLI runs)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kerneltracer.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize("name", ["simple.log", "comp_metrics.log", "links.log", "multi_rank_logs"])
def test_two_steps_equal_one_step(name: str, testdata_dir: Path, tmp_path: Path) -> None:
    log = testdata_dir / "tlparse" / name
    one = _cli("logs", str(log), "-o", str(tmp_path / "one"))
    assert one.returncode == 0, one.stderr
    p = _cli("logs", "parse", str(log), "-o", str(tmp_path / "inter"))
    assert p.returncode == 0, p.stderr
    r = _cli("logs", "render", str(tmp_path / "inter"), "-o", str(tmp_path / "two"))
    assert r.returncode == 0, r.stderr
    a, b = _tree(tmp_path / "one"), _tree(tmp_path / "two")
    assert sorted(a) == sorted(b)
    assert a == b
    assert "index.html" in a


def test_keep_and_only_intermediate(testdata_dir: Path, tmp_path: Path) -> None:
    log = testdata_dir / "tlparse" / "simple.log"
    kept = _cli("logs", "run", str(log), "-o", str(tmp_path / "kept"), "--keep-intermediate")
    assert kept.returncode == 0, kept.stderr
    assert (tmp_path / "kept" / "intermediate" / "manifest.json").is_file()
    only = _cli("logs", str(log), "-o", str(tmp_path / "only"), "--only-intermediate")
    assert only.returncode == 0, only.stderr
    assert (tmp_path / "only" / "manifest.json").is_file()
    assert not (tmp_path / "only" / "index.html").exists()
    kept_inter = _tree(tmp_path / "kept" / "intermediate")
    only_inter = _tree(tmp_path / "only")
    assert sorted(kept_inter) == sorted(only_inter)
