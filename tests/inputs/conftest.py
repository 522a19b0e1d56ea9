"""The tested zoo, built once per session for every module that loads zoo models."""

from __future__ import annotations

from pathlib import Path

import pytest

from kerneltracer.worker.frameworks.huggingface.zoo import build_zoo
from tests.inputs.zooset import TESTED


@pytest.fixture(scope="session")
def zoo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("zoo")
    build_zoo(root, [e.name for e in TESTED])
    return root
