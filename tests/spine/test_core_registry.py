"""The registry helper every name → class table is built on (core/registry.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kerneltracer.core.registry import Entry, Registry, UnknownNameError
from kerneltracer.errors import KernelTracerError, UsageError

_PLUGIN = """
class Shout:
    name = "shout"

class Whisper:
    name = "whisper"

class Misnamed:
    name = "other"
"""


@pytest.fixture
def plugin_dist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """An installed distribution (a module and its dist-info) on sys.path: what ``pip
    install`` of a plug-in package leaves; returns its entry point group."""
    module = f"kt_plugin_{tmp_path.name}"
    (tmp_path / f"{module}.py").write_text(_PLUGIN)
    info = tmp_path / f"{module}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 1.0\n")
    group = f"kt.test.{tmp_path.name}"
    (info / "entry_points.txt").write_text(f"[{group}]\nshout = {module}:Shout\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return group


def _module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str = _PLUGIN) -> str:
    name = f"kt_reg_{tmp_path.name}"
    (tmp_path / f"{name}.py").write_text(body)
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def test_entries_are_keyed_by_the_class_name_and_imported_when_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = _module(tmp_path, monkeypatch)
    table: Registry[type] = Registry("voice", [f"{module}:Whisper", f"{module}:Shout"])
    assert module not in sys.modules  # building the table imports nothing
    assert list(table) == ["whisper", "shout"]  # entry order, names from the classes
    assert module in sys.modules
    assert table["shout"].__name__ == "Shout"


def test_a_declared_name_imports_only_on_lookup_and_must_match(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = _module(tmp_path, monkeypatch)
    table: Registry[type] = Registry(
        "voice", [Entry("shout", f"{module}:Shout"), Entry("loud", f"{module}:Misnamed")]
    )
    assert "shout" in table and list(table) == ["shout", "loud"] and len(table) == 2
    assert module not in sys.modules
    assert table["shout"].__name__ == "Shout"
    with pytest.raises(KernelTracerError, match=r"'loud' names .*Misnamed, whose name is 'other'"):
        table["loud"]


def test_an_unknown_name_is_a_usage_error_listing_the_valid_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = _module(tmp_path, monkeypatch)
    table: Registry[type] = Registry("voice", [f"{module}:Whisper", f"{module}:Shout"])
    with pytest.raises(UsageError) as caught:
        table["sing"]
    assert str(caught.value) == "unknown voice 'sing' (valid: shout, whisper)"
    assert isinstance(caught.value, UnknownNameError) and isinstance(caught.value, KeyError)
    assert table.get("sing") is None  # a Mapping still
    with pytest.raises(UsageError, match=r"unknown voice 'hum' \(valid: shout, whisper\)"):
        table.check(["shout", "hum"])
    assert table.check(["shout", "whisper", "shout"]) == ["shout", "whisper"]


def test_a_name_registered_twice_or_a_missing_target_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = _module(tmp_path, monkeypatch)
    twice: Registry[type] = Registry(
        "voice", [f"{module}:Shout", Entry("shout", f"{module}:Shout")]
    )
    with pytest.raises(KernelTracerError, match="voice 'shout' is registered twice"):
        list(twice)
    gone: Registry[type] = Registry("voice", [f"{module}:Nobody"])
    with pytest.raises(KernelTracerError, match="Nobody cannot be loaded"):
        list(gone)


def test_relative_targets_resolve_against_the_package() -> None:
    table: Registry[type] = Registry("error", [".errors:UsageError"], package="kerneltracer")
    with pytest.raises(KernelTracerError, match="has no name"):
        list(table)  # UsageError has no ``name``: every entry must name itself


def test_an_entry_point_plugin_joins_the_table(plugin_dist: str) -> None:
    table: Registry[type] = Registry("voice", [], group=plugin_dist)
    assert list(table) == ["shout"]
    assert table["shout"].__name__ == "Shout"
    assert list(Registry("voice", [])) == []  # without a group, no plug-ins are read


def test_with_entries_adds_loaded_objects_and_leaves_the_table_alone() -> None:
    class Hum:
        name = "hum"

    table: Registry[type] = Registry("voice", [])
    more = table.with_entries(Hum)
    assert more["hum"] is Hum and "hum" not in table


def test_every_table_of_the_package_is_one_keyed_by_its_classes_names() -> None:
    from kerneltracer.analysis.records.reporters import REPORTERS
    from kerneltracer.analysis.registry import ANALYSES
    from kerneltracer.analysis.structured_logs.rendering.registry import MODULES
    from kerneltracer.cli.main import _COMMANDS
    from kerneltracer.fx.passes.registry import PASSES
    from kerneltracer.tracers.registry import TRACERS
    from kerneltracer.worker.frameworks.registry import LOADERS

    tables = (TRACERS, _COMMANDS, LOADERS, PASSES, ANALYSES, REPORTERS, MODULES)
    for table in tables:
        assert isinstance(table, Registry) and len(table) >= 2
        assert [table[name].name for name in table] == list(table), table.kind
