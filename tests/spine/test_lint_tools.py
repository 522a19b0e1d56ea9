"""`make lint`'s layering and dead-code checks fail on a planted violation.

The package is copied to a temporary dir with the project's configuration; the copy as it
is passes, and one forbidden import or one dead function planted into it fails the tool,
which names it. (The layering rules of the hand-written AST test that used to check
framework imports are the import-linter contracts in pyproject.toml now.)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
pytestmark = pytest.mark.skipif(
    not (BIN / "lint-imports").exists() or not (BIN / "vulture").exists(),
    reason="import-linter and vulture come with the dev extra (make install-dev)",
)


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(
        REPO / "kerneltracer", root / "kerneltracer", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    (root / "tests" / "support").mkdir(parents=True)
    # the whitelist vulture reads, and our contract type `faces` that lint-imports imports
    for name in ("__init__.py", "support/__init__.py", "support/vulture_whitelist.py",
                 "support/import_faces.py"):  # fmt: skip
        shutil.copy(REPO / "tests" / name, root / "tests" / name)
    return root


def _tool(root: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    # The copy, not the installed package, is the one the tools import and read.
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [str(BIN / argv[0]), *argv[1:]],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _lint_imports(root: Path, contract: str) -> subprocess.CompletedProcess[str]:
    return _tool(root, "lint-imports", "--no-cache", "--contract", contract)


@pytest.mark.parametrize(
    ("contract", "module", "line", "named"),
    [
        (
            "core-imports-no-kerneltracer",
            "core/planted.py",
            "from kerneltracer.orchestrator import planner\n",
            "kerneltracer.core.planted -> kerneltracer.orchestrator.planner",
        ),
        (
            "frameworks-only-in-workers",
            "orchestrator/planted.py",
            "import torch\n",
            "kerneltracer.orchestrator.planted -> torch",
        ),
        (
            "fx-imports-only-torch",
            "fx/planted.py",
            "import transformers\n",
            "kerneltracer.fx.planted -> transformers",
        ),
        (
            "config-is-schema",
            "config.py",
            "from kerneltracer.tracers.registry import TRACERS\n",
            "kerneltracer.config -> kerneltracer.tracers.registry",
        ),
        (
            "analysis-not-cli",
            "analysis/timeline/planted.py",
            "from kerneltracer.cli import options\n",
            "kerneltracer.analysis.timeline.planted -> kerneltracer.cli.options",
        ),
        # A back-arrow: the worker process reaching up into the orchestrator.
        (
            "layers",
            "worker/planted.py",
            "from kerneltracer.orchestrator import planner\n",
            "kerneltracer.worker.planted -> kerneltracer.orchestrator.planner",
        ),
        # The tracer catalog reaching up into the implementations it names by string.
        (
            "layers",
            "tracers/planted.py",
            "from kerneltracer.worker.tracers import torch_dispatch\n",
            "kerneltracer.tracers.planted -> kerneltracer.worker.tracers.torch_dispatch",
        ),
        # A format in core reaching up into the package that reads it.
        (
            "layers",
            "core/planted.py",
            "from kerneltracer.corpus import model\n",
            "kerneltracer.core.planted -> kerneltracer.corpus.model",
        ),
        # Siblings of one layer ("analysis | config") import nothing of each other.
        (
            "layers",
            "analysis/planted.py",
            "from kerneltracer import config\n",
            "kerneltracer.analysis.planted -> kerneltracer.config",
        ),
        # Reaching past a package's face into one of its internal modules ...
        (
            "faces",
            "report/planted.py",
            "from kerneltracer.coverage import costs\n",
            "kerneltracer.report.planted -> kerneltracer.coverage.costs",
        ),
        # ... also below a public subpackage (timeline is analysis's face, its model is not),
        (
            "faces",
            "report/planted.py",
            "from kerneltracer.analysis.timeline.model import index\n",
            "kerneltracer.report.planted -> kerneltracer.analysis.timeline.model.index",
        ),
        # ... and into a tracer implementation, which only the worker runs.
        (
            "faces",
            "orchestrator/planted.py",
            "from kerneltracer.worker.tracers import torch_dispatch\n",
            "kerneltracer.orchestrator.planted -> kerneltracer.worker.tracers.torch_dispatch",
        ),
    ],
)
def test_a_planted_import_breaks_its_contract(
    copy: Path, contract: str, module: str, line: str, named: str
) -> None:
    before = _lint_imports(copy, contract)
    assert before.returncode == 0, before.stdout + before.stderr
    (copy / "kerneltracer" / module).write_text(f"{line}")
    after = _lint_imports(copy, contract)
    assert after.returncode == 1
    assert "BROKEN" in after.stdout and named in " ".join(after.stdout.split())


def test_a_face_import_keeps_the_faces_contract(copy: Path) -> None:
    # the package itself, a submodule its __all__ names, and core/ (open whole) are the ways in
    (copy / "kerneltracer/report/planted.py").write_text(
        "from kerneltracer import coverage\n"
        "from kerneltracer.coverage import scan\n"
        "from kerneltracer.core import op_table\n"
    )
    assert _lint_imports(copy, "faces").returncode == 0
    # naming the module in the face opens it
    init = copy / "kerneltracer/coverage/__init__.py"
    planted = copy / "kerneltracer/report/planted.py"
    planted.write_text("from kerneltracer.coverage import costs\n")
    assert _lint_imports(copy, "faces").returncode == 1
    init.write_text(init.read_text().replace('"build_coverage",', '"build_coverage", "costs",'))
    assert _lint_imports(copy, "faces").returncode == 0


def test_a_top_level_package_no_layer_names_breaks_the_layers(copy: Path) -> None:
    # exhaustive: a new package must be given its place, not slip in between the layers
    (copy / "kerneltracer/newcomer").mkdir()
    (copy / "kerneltracer/newcomer/__init__.py").write_text("")
    after = _lint_imports(copy, "layers")
    assert after.returncode == 1
    assert "kerneltracer.newcomer" in after.stdout


# lint-imports shows five of the imports that would break the circles; all of them here.
_ALL_CYCLE_BREAKERS = (
    "import sys, importlinter.contracts.acyclic_siblings as a\n"
    "a.MAX_DEPENDENCIES_TO_RENDER = 10**6\n"
    "from importlinter.cli import lint_imports_command\n"
    "lint_imports_command()\n"
)


def test_a_planted_package_cycle_breaks_the_acyclic_contract(copy: Path) -> None:
    def breakers() -> list[str]:
        proc = subprocess.run(
            [sys.executable, "-c", _ALL_CYCLE_BREAKERS, "--no-cache", "--contract",
             "no-package-cycles"],
            cwd=copy, env={**os.environ, "PYTHONPATH": str(copy)}, capture_output=True,
            text=True, timeout=300,
        )  # fmt: skip
        assert proc.returncode in (0, 1), proc.stderr
        return [line for line in proc.stdout.splitlines() if line.startswith("- .")]

    # costmodel imports nothing of ours but errors, so no circle runs through it ...
    assert not [b for b in breakers() if "costmodel" in b]
    # ... until errors imports costmodel back.
    errors = copy / "kerneltracer/errors.py"
    errors.write_text(errors.read_text() + "\nfrom kerneltracer import costmodel  # noqa\n")
    assert [b for b in breakers() if "costmodel" in b and ".errors" in b]


def test_a_planted_dead_function_fails_vulture(copy: Path) -> None:
    before = _tool(copy, "vulture")
    assert before.returncode == 0, before.stdout
    (copy / "kerneltracer/jsonio_planted.py").write_text(
        "def never_called() -> int:\n    return 1\n"
    )
    after = _tool(copy, "vulture")
    assert after.returncode == 3  # vulture: dead code found
    assert "jsonio_planted.py:1: unused function 'never_called'" in after.stdout
