"""Pages' templates are compiled once per user, not once per run (a small report's cost)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import jinja2
import pytest

from kerneltracer.core import templates


@pytest.fixture
def temp_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    templates._bytecode_cache.cache_clear()
    yield tmp_path
    templates._bytecode_cache.cache_clear()


def _compiles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    real = jinja2.Environment.compile

    def compile_(self: jinja2.Environment, source: str, name: str | None = None, *a, **k):  # type: ignore[no-untyped-def]
        seen.append(name or "")
        return real(self, source, name, *a, **k)

    monkeypatch.setattr(jinja2.Environment, "compile", compile_)
    return seen


def test_a_second_run_loads_the_compiled_template(
    temp_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compiles = _compiles(monkeypatch)
    pages = []
    for _ in range(2):  # two fresh environments, as two runs make
        env = templates.html_environment("kerneltracer.analysis.compile_health", trim=True)
        pages.append(env.get_template("compile_health_body.html.j2"))
    assert compiles == ["compile_health_body.html.j2"]
    assert list((temp_dir).glob("_jinja2-cache-*/__jinja2_*.cache"))


def test_a_cache_that_cannot_be_written_only_costs_the_compile(
    temp_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    templates._bytecode_cache()  # the folder exists, then the disk refuses every write
    monkeypatch.setattr(tempfile, "NamedTemporaryFile", _refuse)
    env = templates.html_environment("kerneltracer.analysis.compile_health", trim=True)
    assert env.get_template("compile_health_body.html.j2") is not None


def _refuse(*_a: object, **_k: object) -> None:
    raise OSError(28, "No space left on device")
