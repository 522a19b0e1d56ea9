"""The report's front page: links from other modules, the stack trie, every compile's artifacts."""

from __future__ import annotations

from typing import Any

from kerneltracer.analysis.structured_logs.compile_id import CompileId
from kerneltracer.analysis.structured_logs.rendering.base import (
    BY_COMPILE_ID,
    MANIFEST,
    ModuleOutput,
    OutputModule,
    RenderContext,
)
from kerneltracer.analysis.structured_logs.rendering.html import render_page
from kerneltracer.analysis.structured_logs.rendering.stacks import (
    StackTrie,
    frame_key,
    trim_dynamo_frames,
)
from kerneltracer.analysis.structured_logs.stats import ParseStats


def _statuses(summaries: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Stack-trie colour per compile id, all attempts of a frame compile folded together."""
    folded: dict[str, list[dict[str, Any]]] = {}
    for s in summaries.values():
        if "compilation_metrics" in s["event_types"]:
            key = CompileId(*s["id_fields"]).collapsed().key()
            folded.setdefault(key, []).append(s)
    out = {}
    for key, group in folded.items():
        if any(s["has_failure"] for s in group):
            out[key] = "status-error"
        elif any(s["metrics"].get("graph_op_count", 1) == 0 for s in group):
            out[key] = "status-empty"
        elif any(s["restart_reasons"] for s in group):
            out[key] = "status-break"
        else:
            out[key] = "status-ok"
    return out


def _folded(summaries: dict[str, dict[str, Any]], key: str) -> str:
    s = summaries.get(key)
    return CompileId(*s["id_fields"]).collapsed().key() if s else key


def _frames(stack: object, strings: list[str | None]) -> list[tuple[str, int, str]]:
    if not isinstance(stack, list):
        return []
    return [frame_key(f, strings) for f in stack if isinstance(f, dict)]


class IndexModule(OutputModule):
    name = "index"
    description = "index.html"
    inputs = (MANIFEST, BY_COMPILE_ID)
    envelope_types = ("dynamo_start", "compilation_metrics")

    @staticmethod
    def _other_stacks(ctx: RenderContext) -> str:
        """Stacks logged with other envelopes (a top-level ``stack`` key): tlparse's
        "unknown stack trie", which shows where shape guards and symbols were created."""
        trie = StackTrie()
        for etype in ctx.manifest.get("types_with_stack", []):
            for e in ctx.iter_type(etype):
                stack = e.get("metadata") if etype == "stack" else e.get("stack")
                frames = _frames(stack, ctx.string_table)
                if frames:
                    trie.insert(frames, e["display_id"], "muted")
        return "" if trie.is_empty() else trie.html("Stacks of other events", open_=False)

    def generate(self, ctx: RenderContext) -> ModuleOutput:
        summaries = ctx.summaries
        trie = StackTrie()
        statuses = _statuses(summaries)
        for e in ctx.iter_type("dynamo_start"):
            frames = (e.get("metadata") or {}).get("stack")
            if isinstance(frames, list):
                keyed = trim_dynamo_frames(
                    [frame_key(f, ctx.string_table) for f in frames if isinstance(f, dict)]
                )
                trie.insert(
                    keyed,
                    e["display_id"],
                    statuses.get(_folded(summaries, e["compile_id"]), "status-missing"),
                )
        extra: dict[str, list[Any]] = {}
        for link in ctx.links:
            if link.title.startswith("symbolic shapes "):
                extra.setdefault(link.title.removeprefix("symbolic shapes "), []).append(link)
        compiles = [
            {
                "display": s["display_id"],
                "failed": s.get("has_failure"),
                "artifacts": [a.as_json() for a in ctx.plan.by_compile.get(key, [])],
                "extra": extra.get(s["display_id"], []),
            }
            for key, s in summaries.items()
        ]
        stats = ParseStats(
            **{
                k: v
                for k, v in ctx.manifest.get("stats", {}).items()
                if k in ParseStats.__dataclass_fields__
            }
        )
        page = render_page(
            "index.html.j2",
            title="tlparse-style report",
            custom_header_html=ctx.config.custom_header_html,
            source=ctx.manifest.get("source_file", ""),
            total=ctx.manifest.get("total_envelopes", 0),
            stats_line=stats.summary(),
            links=[link for link in ctx.links if not link.title.startswith("symbolic shapes ")],
            stack_html="" if trie.is_empty() else trie.html(),
            other_stack_html=self._other_stacks(ctx),
            compiles=compiles,
        )
        return ModuleOutput([ctx.write("index.html", page)])
