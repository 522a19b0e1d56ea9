"""Single source of truth: tracer name → Tracer class, without importing any tracer module.

Config validation and planning need only the names and each tracer's frameworks; those are
declared here, in :data:`BUILTIN`, and a tracer's module is imported the first time its class
is needed (its options validated, its version planned, the worker running it). Adding a
tracer = one module + one line here. Tracers from other packages register through the
``kerneltracer.tracers`` entry point group (``name = "package.module:Class"``); their modules
are imported when the registry first lists them.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from kerneltracer.errors import KernelTracerError, UsageError, choices

if TYPE_CHECKING:
    from kerneltracer.tracers.base import Tracer

FRAMEWORKS = ("huggingface", "vllm")
ENTRY_POINT_GROUP = "kerneltracer.tracers"


@dataclass(frozen=True)
class TracerEntry:
    """What planning knows of a tracer without importing it; ``load`` gives the class."""

    name: str
    target: str  # "package.module:Class"
    frameworks: frozenset[str]

    def load(self) -> type[Tracer]:
        module, _, attr = self.target.partition(":")
        cls: type[Tracer] = getattr(importlib.import_module(module), attr)
        # The class is what runs: its description must be the one planning used.
        if cls.name != self.name or frozenset(cls.frameworks) != self.frameworks:
            raise KernelTracerError(
                f"tracer {self.name!r}: registry entry ({sorted(self.frameworks)}) disagrees "
                f"with {self.target} (name {cls.name!r}, frameworks {sorted(cls.frameworks)})"
            )
        return cls

    @classmethod
    def of(cls, tracer: type[Tracer]) -> TracerEntry:
        """The entry of an already imported class (plugins, tests)."""
        target = f"{tracer.__module__}:{tracer.__qualname__}"
        return cls(tracer.name, target, frozenset(tracer.frameworks))


_HF = frozenset({"huggingface"})
_VLLM = frozenset({"vllm"})
_P = "kerneltracer.worker.tracers."

BUILTIN: tuple[TracerEntry, ...] = (
    TracerEntry("torch_dispatch", f"{_P}torch_dispatch:TorchDispatchTracer", _HF),
    TracerEntry("torch_profiler", f"{_P}torch_profiler:TorchProfilerTracer", _HF),
    TracerEntry("torch_compile", f"{_P}torch_compile:TorchCompileTracer", _HF),
    TracerEntry("print_fx", f"{_P}print_fx:PrintFxTracer", _HF),
    TracerEntry("print_aten", f"{_P}print_aten:PrintAtenTracer", _HF),
    TracerEntry("print_aten_export", f"{_P}print_aten:PrintAtenExportTracer", _HF),
    TracerEntry("print_aten_make_fx", f"{_P}print_aten:PrintAtenMakeFxTracer", _HF),
    TracerEntry("vllm_profiler", f"{_P}vllm_profiler:VllmProfilerTracer", _VLLM),
    TracerEntry("vllm_compile", f"{_P}vllm_compile:VllmCompileTracer", _VLLM),
)


class TracerRegistry(Mapping[str, "type[Tracer]"]):
    """name → Tracer class. Membership, names and frameworks import nothing; a lookup
    imports that one tracer's module (once per registry)."""

    def __init__(self, entries: Iterable[TracerEntry], plugins: bool = False) -> None:
        self._given = tuple(entries)
        self._plugins = plugins
        self._classes: dict[str, type[Tracer]] = {}

    @cached_property
    def entries(self) -> dict[str, TracerEntry]:
        found: dict[str, TracerEntry] = {}
        for entry in (*self._given, *(_plugin_entries() if self._plugins else ())):
            if entry.name in found:
                raise KernelTracerError(f"tracer {entry.name!r} is registered twice")
            found[entry.name] = entry
        return found

    def __getitem__(self, name: str) -> type[Tracer]:
        cls = self._classes.get(name)
        if cls is None:
            cls = self._classes[name] = self.entries[name].load()
        return cls

    def __contains__(self, name: object) -> bool:
        return name in self.entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def frameworks(self, name: str) -> frozenset[str]:
        return self.entries[name].frameworks

    def names_for(self, framework: str) -> list[str]:
        return [n for n, e in self.entries.items() if framework in e.frameworks]

    def with_tracers(self, *tracers: type[Tracer] | TracerEntry) -> TracerRegistry:
        """A registry with these tracers added (classes or entries); self is unchanged."""
        added = [t if isinstance(t, TracerEntry) else TracerEntry.of(t) for t in tracers]
        return TracerRegistry([*self.entries.values(), *added])


def _plugin_entries() -> list[TracerEntry]:
    """Tracers of installed packages: imported now, as only the class knows its frameworks."""
    from importlib.metadata import entry_points  # ~20 ms: only when the names are needed

    found = []
    for point in entry_points(group=ENTRY_POINT_GROUP):
        module, _, attr = point.value.partition(":")
        try:
            tracer: type[Tracer] = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise KernelTracerError(
                f"tracer plugin {point.name!r} ({point.value}) cannot be loaded: {exc}"
            ) from None
        found.append(TracerEntry(point.name, point.value, frozenset(tracer.frameworks)))
    return found


TRACERS = TracerRegistry(BUILTIN, plugins=True)


def get_tracer(name: str, registry: Mapping[str, type[Tracer]] = TRACERS) -> type[Tracer]:
    if name not in registry:
        raise UsageError(f"unknown tracer {name!r} (valid: {choices(registry)})")
    return registry[name]


def tracers_writing(kinds: Iterable[str], registry: TracerRegistry = TRACERS) -> frozenset[str]:
    """The tracers that declare an output of one of ``kinds`` (``Tracer.artefacts``)."""
    wanted = set(kinds)
    return frozenset(n for n, cls in registry.items() if wanted & set(cls.artefacts.values()))
