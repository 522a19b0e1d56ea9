"""Every KT_* environment variable is read in one place: kerneltracer.environ.KtEnv.read."""

from __future__ import annotations

import ast
from pathlib import Path

from kerneltracer.environ import KtEnv

PACKAGE = Path(__file__).resolve().parents[2] / "kerneltracer"
READER = PACKAGE / "environ.py"


def _kt_names(trees: dict[Path, ast.Module]) -> set[str]:
    """Module-level names bound to a ``KT_*`` string anywhere in the package (aliases too)."""
    names: set[str] = set()
    changed = True
    while changed:  # SIZE_ENV = ENV_MAX_INPUT_SIZE: an alias of a KT name is one too
        changed = False
        for tree in trees.values():
            for node in tree.body:
                if not isinstance(node, ast.Assign) or len(node.targets) != 1:
                    continue
                target, value = node.targets[0], node.value
                if not isinstance(target, ast.Name) or target.id in names:
                    continue
                if _is_kt(value, names):
                    names.add(target.id)
                    changed = True
    return names


def _is_kt(node: ast.AST, names: set[str]) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.startswith("KT_")
    return isinstance(node, ast.Name) and node.id in names


def _reads(tree: ast.Module, names: set[str]) -> list[int]:
    """Lines that look a KT name up: ``x.get(K)``, ``x[K]`` (not as a target),
    ``os.getenv(K)``, ``K in x``. Writes (a child's environment) are no reads."""
    found = []
    for node in ast.walk(tree):
        key: ast.AST | None = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in ("get", "getenv", "pop") and node.args:
                key = node.args[0]
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            key = node.slice
        elif isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.In | ast.NotIn):
            key = node.left
        if key is not None and _is_kt(key, names):
            found.append(node.lineno)
    return found


def _reads_outside_the_reader(root: Path, reader: Path) -> list[str]:
    trees = {p: ast.parse(p.read_text(), str(p)) for p in sorted(root.rglob("*.py"))}
    names = _kt_names(trees)
    return [
        f"{path.relative_to(root)}:{line}"
        for path, tree in trees.items()
        if path != reader
        for line in _reads(tree, names)
    ]


def test_kt_variables_are_read_only_by_the_one_reader() -> None:
    assert _reads_outside_the_reader(PACKAGE, READER) == []


def test_the_check_finds_a_read_elsewhere(tmp_path: Path) -> None:
    """The check cannot pass for want of looking: each way of reading a KT name fails."""
    (tmp_path / "environ.py").write_text('A = "KT_A"\nx = env.get(A)\n')
    (tmp_path / "m.py").write_text(
        "import os\n"
        'B = "KT_B"\n'
        "C = B\n"
        'a = os.environ.get("KT_DEBUG")\n'
        "b = os.environ[B]\n"
        "c = os.getenv(C)\n"
        "d = B in os.environ\n"
        'os.environ["KT_X"] = "1"\n'  # a write, for a child: allowed
        'e = {"KT_Y": "1"}\n'
    )
    found = _reads_outside_the_reader(tmp_path, tmp_path / "environ.py")
    assert found == ["m.py:4", "m.py:5", "m.py:6", "m.py:7"], found


def test_the_reader_parses_each_variable() -> None:
    env = KtEnv.read(
        {"KT_ORCHESTRATOR_PID": "123", "KT_GPU_SLOT": "1", "KT_DEBUG": "1", "KT_MAX_EVENTS": "5"}
    )
    assert env == KtEnv(orchestrator_pid=123, gpu_slot="1", debug=True, max_events="5")
    assert KtEnv.read({"KT_ORCHESTRATOR_PID": "x", "KT_DEBUG": "0"}) == KtEnv()
    assert KtEnv.read({}) == KtEnv()
