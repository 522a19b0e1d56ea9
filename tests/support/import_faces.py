"""The import-linter contract type `faces`: another package enters a package only by its face.

A package's face is its `__init__` and the submodules its `__all__` names (a public
subpackage's own `__all__` names its public submodules in turn); every other module is
internal to the package. An import from outside the top-level package into an internal
module breaks the contract. Packages listed in `open_packages` are public whole (core/, the
shared formats).

It is a contract type of ours, not a test: `make lint` runs it with the built-in ones
(pyproject.toml names it in `contract_types`; lint-imports puts the repository root on the
path, so `tests.support` imports). `__all__` is read from the source, not by importing
the package, so reading a face runs none of its code.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from typing import cast

from grimp import ImportGraph
from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck


def declared_all(init: Path) -> set[str]:
    """The strings of a module-level `__all__ = [...]` (or tuple) in `init`; none if absent."""
    names: set[str] = set()
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                try:
                    names.update(ast.literal_eval(node.value))  # type: ignore[arg-type]
                except ValueError:
                    raise ValueError(f"{init}: a face's __all__ is a literal list") from None
    return names


class _Faces:
    """The `__all__` of each package under one root, read once each."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.seen: dict[str, set[str]] = {}

    def face(self, package: str) -> set[str]:
        if package not in self.seen:
            init = self.root.joinpath(*package.split(".")[1:], "__init__.py")
            self.seen[package] = declared_all(init) if init.exists() else set()
        return self.seen[package]

    def internal(self, parts: list[str]) -> str | None:
        """The first module on the way to `parts` that its package's face leaves out."""
        for depth in range(2, len(parts)):
            if parts[depth] not in self.face(".".join(parts[:depth])):
                return ".".join(parts[: depth + 1])
        return None


class FacesContract(Contract):
    """Options: `containers` (the root package), `open_packages` (public whole)."""

    type_name = "faces"

    containers = fields.ListField(subfield=fields.StringField())
    open_packages = fields.ListField(subfield=fields.StringField(), required=False)

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        open_packages = set(cast("list[str]", self.open_packages or []))
        deep: list[dict[str, object]] = []
        for container in cast("list[str]", self.containers):
            spec = importlib.util.find_spec(container)
            assert spec is not None and spec.submodule_search_locations
            faces = _Faces(Path(next(iter(spec.submodule_search_locations))))
            for importer in sorted(graph.modules):
                if not importer.startswith(container + "."):
                    continue
                for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                    parts = imported.split(".")
                    if parts[:2] == importer.split(".")[:2] or len(parts) < 3:
                        continue  # inside one top-level package, or a package itself
                    if ".".join(parts[:2]) in open_packages or parts[0] != container:
                        continue
                    internal = faces.internal(parts)
                    if internal is not None:
                        details = graph.get_import_details(importer=importer, imported=imported)
                        deep.append({
                            "importer": importer,
                            "imported": imported,
                            "internal": internal,
                            "lines": [d["line_number"] for d in details],
                        })  # fmt: skip
        return ContractCheck(kept=not deep, metadata={"deep": deep})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for found in check.metadata["deep"]:
            lines = ", ".join(f"l.{n}" for n in found["lines"])
            output.print_error(
                f"- {found['importer']} -> {found['imported']} ({lines}): "
                f"{found['internal']} is not in its package's __all__",
                bold=False,
            )
        output.new_line()
        output.print(
            "Import the package or a submodule its __all__ names; if the outside package "
            "really needs the internal module, declare it in the face or move it to core/."
        )
