"""The hub's cached tree listing, read the way huggingface_hub writes it."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from kerneltracer.core.snapshot import TREE_FORMAT_VERSION, cached_tree, repo_storage

COMMIT = "a" * 40
REPO = Path(__file__).resolve().parents[2]


def _write_tree(cache: Path, data: object) -> None:
    path = repo_storage(cache, "org/m") / "trees" / f"{COMMIT}.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(data))


def test_tree_of_the_known_format_is_read(tmp_path: Path) -> None:
    files = {"config.json": {"size": 519, "blob_id": "x"}, "w.safetensors": {"size": 7}}
    _write_tree(tmp_path, {"format_version": TREE_FORMAT_VERSION, "files": files})
    assert cached_tree(tmp_path, "org/m", COMMIT) == {"config.json": 519, "w.safetensors": 7}


@pytest.mark.parametrize(
    "data",
    [{"format_version": 2, "files": {"a": {"size": 1}}}, {"files": {"a": {"size": 1}}}, [1]],
)
def test_unknown_or_broken_tree_counts_as_not_cached(tmp_path: Path, data: object) -> None:
    _write_tree(tmp_path, data)
    assert cached_tree(tmp_path, "org/m", COMMIT) is None
    assert cached_tree(tmp_path, "org/other", COMMIT) is None


def test_installed_hub_writes_the_format_we_read_and_meets_the_lower_bound() -> None:
    import huggingface_hub
    from huggingface_hub import _tree_cache

    assert _tree_cache.TREE_CACHE_FORMAT_VERSION == TREE_FORMAT_VERSION
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    (bound,) = [d.split(">=")[1] for d in deps if d.startswith("huggingface_hub>=")]
    assert bound == "1.22"
    installed = tuple(int(p) for p in huggingface_hub.__version__.split(".")[:2])
    assert installed >= (1, 22)
