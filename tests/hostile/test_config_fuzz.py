"""Fuzzing the config loader: any file gives a config or one ConfigError, never a crash.

Three sources of input: random bytes, random YAML documents built from the config's own
field names (so validation, not just parsing, is reached), and random edits of a valid
config. Whatever comes in, ``load_config`` raises nothing but ConfigError, whose message
names the file.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kerneltracer.config import RunConfig
from kerneltracer.errors import ConfigError
from kerneltracer.orchestrator.planning import load_config

_SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
_VALID = (
    "output_dir: run\n"
    "defaults:\n  tracers: [torch_dispatch]\n  batch_size: 2\n  timeout_s: 60\n"
    "models:\n  - path: m\n    name: m1\n  - id: org/model\n    revision: main\n"
    "slurm:\n  partition: debug\n  extra_sbatch: ['--exclusive']\n"
)
_FIELDS = sorted(
    {
        *RunConfig.model_fields,
        *RunConfig.model_fields["defaults"].annotation.model_fields,  # type: ignore[union-attr]
        "id",
        "path",
        "name",
        "revision",
        "partition",
        "torch_dispatch",
        "python",
    }
)
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from(
        ["m", "org/model", "..", "/", "/dev/null", "cpu", "cuda:0", "eval", "a" * 300, "a\nb"]
    ),
)
_keys = st.one_of(st.sampled_from(_FIELDS), st.text(max_size=10))
_docs = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_keys, inner, max_size=6)),
    max_leaves=25,
)


def _load(text: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "m").mkdir()
        path = Path(tmp) / "fuzz.yaml"
        path.write_bytes(text)
        try:
            load_config(path)
        except ConfigError as exc:
            assert str(exc).startswith(str(path)), str(exc)
            assert "\n" not in str(exc).strip()


@_SETTINGS
@given(st.binary(max_size=400))
def test_random_bytes(data: bytes) -> None:
    _load(data)


@_SETTINGS
@given(st.dictionaries(_keys, _docs, max_size=6), st.sampled_from(_FIELDS))
def test_random_documents(doc: dict[str, Any], extra: str) -> None:
    doc.setdefault("models", [{"path": "m", extra: doc.get(extra)}])
    _load(yaml.safe_dump(doc, allow_unicode=True).encode("utf-8", "surrogatepass"))


@_SETTINGS
@given(st.lists(st.tuples(st.integers(0, len(_VALID)), st.integers(0, 8), st.text(max_size=6))))
def test_random_edits_of_a_valid_config(edits: list[tuple[int, int, str]]) -> None:
    text = _VALID
    for at, cut, insert in edits:
        text = text[:at] + insert + text[at + cut :]
    _load(text.encode("utf-8", "surrogatepass"))
