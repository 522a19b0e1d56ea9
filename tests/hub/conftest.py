"""Fixtures: tiny models served as repos by a real local HTTP hub, and an env pointing at it."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.hub.hubserver import LocalHub, Repo, make_repo, running_hub

# Weights in formats a download must leave out when safetensors exist.
DUPLICATES = {
    "pytorch_model.bin": b"\0" * 4096,
    "model.onnx": b"\1" * 4096,
    "onnx/model.onnx": b"\2" * 4096,
    "model.gguf": b"\3" * 4096,
}


@dataclass
class HubRepos:
    hub: LocalHub
    llama: Repo  # with duplicate weight formats beside its safetensors
    gpt2: Repo
    bert: Repo
    gpt2_bin: Repo  # no safetensors: its pytorch_model.bin must be fetched
    dirs: dict[str, Path]

    @property
    def good(self) -> list[Repo]:
        return [self.llama, self.gpt2, self.bert, self.gpt2_bin]


@pytest.fixture(scope="session")
def tiny_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from kerneltracer.worker.frameworks.huggingface.tiny import build_tiny_models

    root = tmp_path_factory.mktemp("hub-tiny-models")
    dirs = {name: path for name, (path, _) in build_tiny_models(root).items()}
    bin_only = root / "tiny-gpt2-bin"
    shutil.copytree(dirs["tiny-gpt2"], bin_only)
    (bin_only / "model.safetensors").rename(bin_only / "pytorch_model.bin")
    dirs["tiny-gpt2-bin"] = bin_only
    return dirs


@pytest.fixture
def repos(tiny_dirs: dict[str, Path]) -> Iterator[HubRepos]:
    with running_hub() as hub:
        yield HubRepos(
            hub=hub,
            llama=hub.add(make_repo("org/tiny-llama", tiny_dirs["tiny-llama"], DUPLICATES)),
            gpt2=hub.add(make_repo("org/tiny-gpt2", tiny_dirs["tiny-gpt2"])),
            bert=hub.add(make_repo("acme/tiny-bert", tiny_dirs["tiny-bert"])),
            gpt2_bin=hub.add(make_repo("org/tiny-gpt2-bin", tiny_dirs["tiny-gpt2-bin"])),
            dirs=tiny_dirs,
        )


@pytest.fixture
def hub_env(tmp_path: Path, repos: HubRepos) -> dict[str, str]:
    """Own HF cache, the local hub as endpoint, no xet, no inherited HF settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "KT_", "TORCH"))}
    env.pop("TRANSFORMERS_OFFLINE", None)
    env.update(
        {
            "HF_HOME": str(tmp_path / "hf-home"),
            "HF_ENDPOINT": repos.hub.endpoint,
            "HF_HUB_DISABLE_XET": "1",
            "HF_HUB_DISABLE_TELEMETRY": "1",
            "OMP_NUM_THREADS": "1",
            "COLUMNS": "200",
        }
    )
    return env
