"""Fixtures for the compiler tracers' tests: tiny models, the compile fixture model, env."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.helpers import FIXTURES


def make_compile_model(root: Path, variant: str) -> Path:
    """A local remote-code model dir (needs trust_remote_code) of the given variant."""
    import numpy as np
    from safetensors.numpy import save_file

    out = root / f"compile-{variant}"
    out.mkdir(parents=True, exist_ok=True)
    for src in (FIXTURES / "compile_model").glob("*.py"):
        shutil.copy(src, out / src.name)
    config = {
        "model_type": "kt_compile_fixture",
        "architectures": ["CompileFixtureModel"],
        "auto_map": {
            "AutoConfig": "configuration_compile_fixture.CompileFixtureConfig",
            "AutoModel": "modeling_compile_fixture.CompileFixtureModel",
        },
        "variant": variant,
        "vocab_size": 64,
        "hidden_size": 8,
    }
    (out / "config.json").write_text(json.dumps(config))
    rng = np.random.default_rng(0)
    save_file(
        {
            "embed.weight": rng.standard_normal((64, 8)).astype(np.float32),
            "proj.weight": rng.standard_normal((8, 8)).astype(np.float32),
            "proj.bias": np.zeros(8, dtype=np.float32),
        },
        str(out / "model.safetensors"),
    )
    return out
