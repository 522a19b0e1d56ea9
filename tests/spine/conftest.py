"""Fixtures for the spine's end-to-end tests: tiny models built once, isolated env."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from kerneltracer.tinymodels import build_tiny_models

    root = tmp_path_factory.mktemp("tiny-models")
    return {name: path for name, (path, _) in build_tiny_models(root).items()}


@pytest.fixture
def kt_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """Environment for CLI subprocesses: own HF cache, nothing inherited that changes runs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "KT_", "TORCH"))}
    env["HF_HOME"] = str(tmp_path / "hf-home")
    env["OMP_NUM_THREADS"] = "1"
    env["COLUMNS"] = "200"
    yield env
