"""Every package declares its face, and a face names only what is there.

The `faces` contract (make lint; tests/support/import_faces.py) reads each package's
`__all__` as its face; these keep those declarations honest: a top-level package without
`__all__` would be closed to every other package by accident, and a name in `__all__` that
is neither a submodule nor an attribute would open nothing.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import pytest

import kerneltracer
from tests.support.import_faces import declared_all

ROOT = Path(kerneltracer.__file__).parent
# core/ is public whole (the contract's open_packages): it declares no face.
OPEN = {"core"}


def _packages() -> list[str]:
    # the root's __all__ is the Python API (tests/api checks it), not a face
    found = []
    for info in pkgutil.walk_packages([str(ROOT)], prefix="kerneltracer."):
        if info.ispkg:
            found.append(info.name)
    return found


def test_every_top_level_package_declares_its_face() -> None:
    tops = [p.name for p in ROOT.iterdir() if (p / "__init__.py").exists()]
    assert len(tops) > 10
    missing = [t for t in tops if t not in OPEN and not declared_all(ROOT / t / "__init__.py")]
    assert not missing, f"packages with no __all__ (their face): {missing}"


def test_every_name_a_face_declares_is_there() -> None:
    stale = []
    for package in _packages():
        init = ROOT.joinpath(*package.split(".")[1:], "__init__.py")
        module = importlib.import_module(package)
        for name in declared_all(init):
            sub = init.parent / name
            if (sub.with_suffix(".py")).exists() or (sub / "__init__.py").exists():
                continue
            if not hasattr(module, name):
                stale.append(f"{package}.{name}")
    assert not stale, f"names in __all__ that are neither a submodule nor defined: {stale}"


def test_declared_all_reads_the_literal(tmp_path: Path) -> None:
    init = tmp_path / "__init__.py"
    init.write_text('"""Doc."""\n\n__all__ = ["b", "a"]\n')
    assert declared_all(init) == {"a", "b"}
    init.write_text("x = 1\n")
    assert declared_all(init) == set()
    init.write_text("__all__ = [*NAMES]\n")
    with pytest.raises(ValueError, match="literal list"):
        declared_all(init)
