"""The vLLM venv the tests run vLLM workers in: `make vllm` builds it (`make test` does)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, require


@pytest.fixture(scope="session")
def vllm_python() -> Path:
    """$KT_VLLM_PYTHON, default .venv-vllm/bin/python; it must import vllm and kerneltracer."""
    python = Path(os.environ.get("KT_VLLM_PYTHON", REPO_ROOT / ".venv-vllm" / "bin" / "python"))
    require(python.exists(), f"vLLM interpreter {python} (run `make vllm`)")
    probe = subprocess.run(
        [
            str(python),
            "-c",
            "import importlib.util as u, kerneltracer;"
            " raise SystemExit(u.find_spec('vllm') is None)",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    require(
        probe.returncode == 0, f"vllm + kerneltracer in {python} ({probe.stderr.strip()[-200:]})"
    )
    return python
