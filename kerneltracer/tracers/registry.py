"""Single source of truth: tracer name → Tracer class, without importing any tracer module.

Config validation and planning need only the names and each tracer's frameworks; those are
declared here, in :data:`BUILTIN`, and a tracer's module is imported the first time its class
is needed (its options validated, its version planned, the worker running it). Adding a
tracer = one module + one line here. Tracers from other packages register through the
``kerneltracer.tracers`` entry point group (``name = "package.module:Class"``); their modules
are imported when the registry first lists them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from kerneltracer.core.registry import Entry, Registry
from kerneltracer.errors import KernelTracerError

if TYPE_CHECKING:
    from kerneltracer.tracers.base import Tracer

FRAMEWORKS = ("huggingface", "vllm")


@dataclass(frozen=True)
class TracerEntry(Entry):
    """What planning knows of a tracer without importing it; ``load`` gives the class."""

    frameworks: frozenset[str]

    def load(self) -> type[Tracer]:
        cls: type[Tracer] = super().load()
        # The class is what runs: its description must be the one planning used.
        if frozenset(cls.frameworks) != self.frameworks:
            raise KernelTracerError(
                f"tracer {self.name!r}: registry entry ({sorted(self.frameworks)}) disagrees "
                f"with {self.target} (frameworks {sorted(cls.frameworks)})"
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


class TracerRegistry(Registry["type[Tracer]"]):
    """name → Tracer class. Membership, names and frameworks import nothing but plug-ins;
    a lookup imports that one tracer's module (once per registry)."""

    def frameworks(self, name: str) -> frozenset[str]:
        return self._entry(name).frameworks

    def names_for(self, framework: str) -> list[str]:
        return [n for n in self.entries if framework in self.frameworks(n)]

    def with_tracers(self, *tracers: type[Tracer]) -> TracerRegistry:
        """A registry with these tracer classes added; self is unchanged."""
        return cast(TracerRegistry, self.with_entries(*tracers))

    def entry_of(self, obj: type[Tracer]) -> TracerEntry:
        return TracerEntry.of(obj)

    def plugin_entry(self, name: str, target: str) -> TracerEntry:
        """Imported now: only the class knows its frameworks."""
        tracer: type[Tracer] = Entry(name, target).load()
        return TracerEntry(name, target, frozenset(tracer.frameworks))

    def _entry(self, name: str) -> TracerEntry:
        entry = self.entries.get(name)
        if not isinstance(entry, TracerEntry):
            raise self.unknown(name)
        return entry


TRACERS = TracerRegistry("tracer", BUILTIN, group="kerneltracer.tracers")


def tracers_writing(kinds: Iterable[str], registry: TracerRegistry = TRACERS) -> frozenset[str]:
    """The tracers that declare an output of one of ``kinds`` (``Tracer.artefacts``)."""
    wanted = set(kinds)
    return frozenset(n for n, cls in registry.items() if wanted & set(cls.artefacts.values()))
