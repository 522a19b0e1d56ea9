"""Fixtures for the compiler tracers' tests: tiny models, the compile fixture model, env."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import make_remote_code_model


def make_compile_model(root: Path, variant: str) -> Path:
    """A local remote-code model dir (needs trust_remote_code) of the given variant."""
    config = {
        "model_type": "kt_compile_fixture",
        "architectures": ["CompileFixtureModel"],
        "auto_map": {
            "AutoConfig": "configuration_compile_fixture.CompileFixtureConfig",
            "AutoModel": "modeling_compile_fixture.CompileFixtureModel",
        },
        "variant": variant,
    }
    return make_remote_code_model(root / f"compile-{variant}", "compile_model", config)
