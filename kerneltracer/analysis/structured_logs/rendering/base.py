"""The module interface of stage 2 and the context modules share.

A module names the intermediate files it needs and writes its outputs through the
context; it never reads the original log. Shared, expensive views of the intermediate
(the artifact plan) are computed once per render and cached on the context.
"""

from __future__ import annotations

import os
import shutil
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import orjson

from kerneltracer.analysis.structured_logs.envelopes import safe_name
from kerneltracer.analysis.structured_logs.rendering.filewriter import FileWriter

if TYPE_CHECKING:
    from kerneltracer.analysis.structured_logs.rendering.plan import Artifact


@dataclass(frozen=True)
class IntermediateFile:
    """A dependency: ``kind`` is by_type, by_compile_id (the summaries), events (the
    per-compile-id ``events.jsonl``), manifest, string_table or raw."""

    kind: str
    name: str = ""

    def exists(self, inter: Path) -> bool:
        if self.kind == "by_type":
            suffix = ".json" if self.name == "chromium_events" else ".jsonl"
            return (inter / "by_type" / f"{self.name}{suffix}").is_file()
        if self.kind == "events":
            manifest = orjson.loads((inter / "manifest.json").read_bytes())
            return bool(manifest.get("has_events", True))
        return (inter / _FIXED[self.kind]).exists()


_FIXED = {
    "manifest": "manifest.json",
    "string_table": "string_table.json",
    "raw": "raw.jsonl",
    "by_compile_id": "by_compile_id",
}
MANIFEST = IntermediateFile("manifest")
BY_COMPILE_ID = IntermediateFile("by_compile_id")
RAW = IntermediateFile("raw")


def by_type(name: str) -> IntermediateFile:
    return IntermediateFile("by_type", name)


@dataclass
class IndexLink:
    title: str
    url: str
    detail: str = ""


@dataclass
class ModuleOutput:
    files: list[str] = field(default_factory=list)  # paths relative to the output dir
    index_links: list[IndexLink] = field(default_factory=list)

    @classmethod
    def linked(cls, rel: str, title: str = "", detail: str = "") -> ModuleOutput:
        """One file, linked from the index (under its own path unless ``title``)."""
        return cls([rel], [IndexLink(title or rel, rel, detail)])


@dataclass
class RenderConfig:
    export: bool = False
    custom_header_html: str = ""


class RenderContext:
    """What a module may use: the intermediate (read-only) and the output dir."""

    def __init__(self, inter: Path, out: Path, config: RenderConfig) -> None:
        self.inter = inter
        self.out = out
        self.config = config
        self.links: list[IndexLink] = []
        self._made_dirs: set[Path] = set()
        self._writer: FileWriter | None = None

    @cached_property
    def manifest(self) -> dict[str, Any]:
        data: dict[str, Any] = orjson.loads((self.inter / "manifest.json").read_bytes())
        return data

    @cached_property
    def string_table(self) -> list[str | None]:
        data = orjson.loads((self.inter / "string_table.json").read_bytes())
        table: list[str | None] = data.get("string_table", [])
        return table

    @cached_property
    def summaries(self) -> dict[str, dict[str, Any]]:
        """Compile-id summaries, in first-seen order."""
        root = self.inter / "by_compile_id"
        return {
            key: orjson.loads((root / key / "summary.json").read_bytes())
            for key in self.manifest.get("compile_ids", [])
        }

    @cached_property
    def plan(self) -> Any:
        from kerneltracer.analysis.structured_logs.rendering.plan import build_plan

        return build_plan(self.summaries, export=self.config.export)

    def iter_type(self, etype: str) -> Iterator[dict[str, Any]]:
        """Entries of ``by_type/<etype>.jsonl`` in log order (none if the file is absent)."""
        path = self.inter / "by_type" / f"{safe_name(etype)}.jsonl"
        if not path.is_file():
            return
        # A large buffer: payload lines run to megabytes, and the default 8 KiB one reads
        # them a few KiB per system call.
        with open(path, "rb", buffering=1 << 20) as fh:
            for line in fh:
                yield orjson.loads(line)

    def artifacts(self, etypes: Iterable[str]) -> Iterator[tuple[str, dict[str, Any], Artifact]]:
        """Each file the plan gives an envelope of ``etypes``: (type, envelope, artifact),
        in type order, then log order."""
        for etype in etypes:
            for entry in self.iter_type(etype):
                for art in self.plan.files_for(entry["seq"], etype):
                    yield etype, entry, art

    def publish(self, src: Path, rel: str) -> str:
        """Put an intermediate file into the output unchanged: a hard link when possible.

        Intermediate files are never modified after stage 1, so sharing the inode is safe,
        and it saves writing the same bytes twice.
        """
        dst = self.out / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(src, dst)
        except OSError:
            shutil.copyfile(src, dst)
        return rel

    def write(self, rel: str, data: str | bytes) -> str:
        path = self.out / rel
        if path.parent not in self._made_dirs:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._made_dirs.add(path.parent)
        if self._writer is None:
            self._writer = FileWriter()
        self._writer.write(path, data.encode("utf-8", "replace") if isinstance(data, str) else data)
        return rel

    def flush(self) -> None:
        """Wait until every file given to ``write`` is on disk (raise the first failure)."""
        if self._writer is not None:
            writer, self._writer = self._writer, None
            writer.close()


class OutputModule(ABC):
    name: ClassVar[str]
    description: ClassVar[str] = ""
    # Which reports run it by default: the normal one, tlparse's --export one.
    in_normal: ClassVar[bool] = True
    in_export: ClassVar[bool] = False
    # What it reads: these files, and by_type/<t> for each envelope type.
    inputs: ClassVar[tuple[IntermediateFile, ...]] = (BY_COMPILE_ID,)
    envelope_types: ClassVar[tuple[str, ...]] = ()

    def required_inputs(self) -> list[IntermediateFile]:
        """Intermediate files this module reads (all must exist for it to run)."""
        return [*self.inputs, *(by_type(t) for t in self.envelope_types)]

    @abstractmethod
    def generate(self, ctx: RenderContext) -> ModuleOutput:
        """Write outputs under ``ctx.out``; return what was written and index links."""


class ArtifactPages(OutputModule):
    """The common shape (tlparse's per-artifact output): one file per artifact the plan
    gives an envelope of ``envelope_types``, at the artifact's url."""

    def generate(self, ctx: RenderContext) -> ModuleOutput:
        self.begin(ctx)
        out = ModuleOutput()
        for etype, entry, art in ctx.artifacts(self.envelope_types):
            content = self.page(ctx, etype, entry, art)
            if content is not None:
                out.files.append(ctx.write(art.url, content))
        return out

    def begin(self, ctx: RenderContext) -> None:
        """Before the first page: read what every page shares."""

    @abstractmethod
    def page(
        self, ctx: RenderContext, etype: str, entry: dict[str, Any], art: Artifact
    ) -> str | bytes | None:
        """The file of one artifact of ``entry``; None writes nothing."""
