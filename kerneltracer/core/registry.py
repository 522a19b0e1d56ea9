"""Name → class tables (tracers, loaders, passes, analyses, …), all built one way.

Each entry is a ``"package.module:attr"`` target, imported on first use, and keyed by the
loaded object's ``name``, so a name is spelt once: on the class. Where a name must be known
without importing (config checks and the worker's start must not import every tracer), the
entry declares it and loading checks that the class agrees. Installed packages add entries
through an entry point group (``name = "package.module:Class"``), read when the table is
first listed.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Generic, TypeVar

from kerneltracer.errors import KernelTracerError, UsageError, choices

T = TypeVar("T")


class UnknownNameError(UsageError, KeyError):
    """A name no entry has; a ``KeyError`` too, so ``Mapping.get`` and ``in`` work."""

    __str__ = UsageError.__str__  # KeyError's would quote the message


@dataclass(frozen=True)
class Entry:
    """A target to import; ``name`` None where it is learnt by importing."""

    name: str | None
    target: str  # "package.module:attr", the module absolute or relative to ``package``
    package: str | None = field(default=None, kw_only=True)

    def load(self) -> Any:
        module, _, attr = self.target.partition(":")
        try:
            obj = getattr(importlib.import_module(module, self.package), attr)
        except (ImportError, AttributeError) as exc:
            what = f"{self.name!r} ({self.target})" if self.name else self.target
            raise KernelTracerError(f"{what} cannot be loaded: {exc}") from None
        found = getattr(obj, "name", None)
        if self.name is not None and found != self.name:
            raise KernelTracerError(
                f"registry entry {self.name!r} names {self.target}, whose name is {found!r}"
            )
        return obj


class Registry(Mapping[str, T], Generic[T]):
    """name → loaded object, in entry order. Entries with a declared name are imported
    when looked up; the others (and plug-ins) when the table is first listed."""

    def __init__(
        self,
        kind: str,
        entries: Iterable[str | Entry] = (),
        *,
        package: str | None = None,
        group: str | None = None,
        loaded: Iterable[T] = (),
    ) -> None:
        self.kind = kind  # "tracer", "pass": how error messages call an entry
        self.group = group
        self._given = tuple(_entry(e, package) for e in entries)
        self._loaded_given = tuple(loaded)
        self._objects: dict[str, T] = {}

    @cached_property
    def entries(self) -> dict[str, Entry]:
        found: dict[str, Entry] = {}
        for entry in (*self._given, *self._plugin_entries()):
            name = entry.name
            if name is None:
                obj = entry.load()
                name = self._name_of(obj, entry.target)
                self._objects[name] = obj
                entry = replace(entry, name=name)
            self._add(found, name, entry)
        for obj in self._loaded_given:
            name = self._name_of(obj, _target_of(obj))
            self._add(found, name, self.entry_of(obj))
            self._objects[name] = obj
        return found

    def _add(self, found: dict[str, Entry], name: str, entry: Entry) -> None:
        if name in found:
            raise KernelTracerError(
                f"{self.kind} {name!r} is registered twice ({found[name].target}, {entry.target})"
            )
        found[name] = entry

    def _name_of(self, obj: object, where: str) -> str:
        name = getattr(obj, "name", None)
        if not isinstance(name, str):
            raise KernelTracerError(f"{self.kind} {where} has no name (a str class attribute)")
        return name

    def _plugin_entries(self) -> list[Entry]:
        if self.group is None:
            return []
        from importlib.metadata import entry_points  # ~20 ms: only when plug-ins are asked

        return [self.plugin_entry(p.name, p.value) for p in entry_points(group=self.group)]

    def plugin_entry(self, name: str, target: str) -> Entry:
        """The entry of one installed plug-in (a subclass may read more of it)."""
        return Entry(name, target)

    def entry_of(self, obj: T) -> Entry:
        """The entry of an object already loaded."""
        return Entry(self._name_of(obj, _target_of(obj)), _target_of(obj))

    def __getitem__(self, name: str) -> T:
        entries = self.entries  # fills in what listing them loaded
        obj = self._objects.get(name)
        if obj is None:
            entry = entries.get(name)
            if entry is None:
                raise self.unknown(name)
            obj = self._objects[name] = entry.load()
        return obj

    def unknown(self, name: str) -> UnknownNameError:
        """The error for a name no entry has: it lists the valid ones."""
        return UnknownNameError(
            f"unknown {self.kind} {name!r} (valid: {choices(self.entries) or 'none'})"
        )

    def __contains__(self, name: object) -> bool:
        return name in self.entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def check(self, names: Iterable[str]) -> list[str]:
        """``names`` as a list, deduplicated; an unknown one is a usage error."""
        wanted = list(dict.fromkeys(names))
        for name in wanted:
            if name not in self.entries:
                raise self.unknown(name)
        return wanted

    def with_entries(self, *added: T) -> Registry[T]:
        """This table plus already-loaded objects (plug-ins given in code, tests); the
        new table reads no entry point group again (its plug-ins are among the entries)."""
        return type(self)(self.kind, self.entries.values(), loaded=added)


def _entry(given: str | Entry, package: str | None) -> Entry:
    if isinstance(given, str):
        return Entry(None, given, package=package)
    return given if given.package else replace(given, package=package)


def _target_of(obj: object) -> str:
    return f"{getattr(obj, '__module__', '?')}:{getattr(obj, '__qualname__', '?')}"
