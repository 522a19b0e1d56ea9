"""No import circle between the files of one folder, lazy and type-only imports included:
a circle there is a shared type or helper living in one of the pair (issue 40)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "kerneltracer"


def _imports(folder: Path) -> dict[str, set[str]]:
    """File stem → the stems of this folder it imports (anywhere in the file)."""
    dotted = ".".join(("kerneltracer", *folder.relative_to(PACKAGE).parts))
    stems = {p.stem for p in folder.glob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in folder.glob("*.py"):
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                head, _, stem = name.rpartition(".")
                if head == dotted and stem in stems and stem != path.stem:
                    found.add(stem)
        graph[path.stem] = found
    return graph


def _circle(graph: dict[str, set[str]]) -> list[str]:
    """One circle of ``graph`` (empty when there is none)."""
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node] = 2
        path.pop()
        return []

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return []


def test_the_circle_finder_finds_one() -> None:
    assert _circle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _circle({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("folder", ["analysis/compile_health", "fx", "fx/passes", "core"])
def test_no_circle_between_the_files_of(folder: str) -> None:
    assert _circle(_imports(PACKAGE / folder)) == []
