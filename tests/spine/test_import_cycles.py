"""No two modules of kerneltracer import each other, directly or round a longer circle.

import-linter's contracts (pyproject.toml) keep the top-level packages acyclic and layered;
this keeps the modules inside one package acyclic too. The graph is grimp's (what
import-linter reads), so an import inside a function or under TYPE_CHECKING counts.
"""

from __future__ import annotations

import grimp
import pytest

# None are known: the last ones (a shared type living in one of a pair) were moved out in
# issue 40. A new circle fails the test below.
KNOWN_CYCLES: set[frozenset[str]] = set()


def import_cycles(graph: grimp.ImportGraph) -> set[frozenset[str]]:
    """The sets of modules that import each other round a circle (Tarjan's strongly
    connected components of more than one module)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[frozenset[str]] = set()

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == module:
                    break
            if len(component) > 1:
                found.add(frozenset(component))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return found


def _graph(*edges: str) -> grimp.ImportGraph:
    graph = grimp.ImportGraph()
    for edge in edges:
        importer, imported = edge.split(" -> ")
        graph.add_import(importer=importer, imported=imported)
    return graph


def test_the_finder_sees_circles_of_any_length_and_nothing_else() -> None:
    graph = _graph("a -> b", "b -> c", "c -> a", "c -> d", "d -> e", "e -> d", "f -> a")
    assert import_cycles(graph) == {frozenset("abc"), frozenset("de")}
    assert import_cycles(_graph("a -> b", "b -> c", "a -> c")) == set()


@pytest.fixture(scope="module")
def package_graph() -> grimp.ImportGraph:
    return grimp.build_graph("kerneltracer", cache_dir=None)


def test_no_module_circles_but_the_known_ones(package_graph: grimp.ImportGraph) -> None:
    cycles = import_cycles(package_graph)
    new = [sorted(c) for c in cycles - KNOWN_CYCLES]
    assert not new, f"modules that import each other (move the shared part out): {new}"
    gone = [sorted(c) for c in KNOWN_CYCLES - cycles]
    assert not gone, f"known circles no longer there: drop them from KNOWN_CYCLES: {gone}"
