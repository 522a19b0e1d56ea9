"""The wheel and sdist carry the whole package (templates, schemas, data files included),
the console script and the changelog; scripts/build-dist.sh builds them as CI does."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    env_python = {"PYTHON": sys.executable}
    subprocess.run(
        ["bash", str(ROOT / "scripts" / "build-dist.sh"), str(out)],
        check=True,
        capture_output=True,
        env={**__import__("os").environ, **env_python},
    )
    return out


def _package_files() -> set[str]:
    listed = subprocess.run(
        ["git", "ls-files", "kerneltracer"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return {p for p in listed if (ROOT / p).is_file()}


def test_wheel_carries_every_package_file(dist: Path) -> None:
    (wheel,) = dist.glob("kerneltracer-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = sorted(_package_files() - names)
    assert not missing, f"not in the wheel: {missing}"
    data = [n for n in names if n.endswith((".j2", ".json", ".yaml", ".css", ".js", ".md"))]
    assert len(data) > 30  # templates, schemas, the device table, FORMAT.md
    info = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "kerneltracer = kerneltracer.cli.main:main" in zipfile.ZipFile(wheel).read(info).decode()
    meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
    headers = Parser().parsestr(zipfile.ZipFile(wheel).read(meta).decode())
    requires = " ".join(headers.get_all("Requires-Dist") or [])
    assert "pandas" in requires and "mkdocs" in requires  # the API's frames; the docs extra


def test_sdist_carries_package_changelog_and_locks(dist: Path) -> None:
    (sdist,) = dist.glob("kerneltracer-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    missing = sorted(_package_files() - names)
    assert not missing, f"not in the sdist: {missing}"
    for extra in ("CHANGELOG.md", "pyproject.toml", "requirements/run.txt", "examples/api.ipynb"):
        assert extra in names
