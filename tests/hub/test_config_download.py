"""The `download:` section of a run config."""

from __future__ import annotations

from pathlib import Path

import pytest

from kerneltracer.config import RunConfig
from kerneltracer.errors import ConfigError
from kerneltracer.orchestrator.planning import load_config


def _load(tmp_path: Path, text: str) -> RunConfig:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return load_config(path)[0]


def test_defaults_fetch_safetensors_not_duplicate_weights(tmp_path: Path) -> None:
    cfg = _load(tmp_path, "models:\n  - id: org/name\n")
    assert (cfg.download.max_workers, cfg.download.timeout_s) == (4, 3600.0)
    assert "*.safetensors" in cfg.download.allow_patterns
    assert not any(p.endswith((".bin", ".onnx", ".gguf")) for p in cfg.download.allow_patterns)


def test_bad_download_settings_name_the_field(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        _load(tmp_path, "models:\n  - id: org/name\ndownload:\n  max_wokers: 2\n")
    assert str(err.value) == (
        f"{tmp_path / 'config.yaml'}:4: download.max_wokers: unknown field 'max_wokers' "
        "(valid: allow_patterns, ignore_patterns, max_workers, timeout_s)"
    )
    with pytest.raises(ConfigError, match=r":4: download.timeout_s: Input should be greater"):
        _load(tmp_path, "models:\n  - id: org/name\ndownload:\n  timeout_s: 0\n")
