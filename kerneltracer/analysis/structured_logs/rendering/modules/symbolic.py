"""Symbolic shapes: per compile id, the guards, provenance and symbols the shape env logged."""

from __future__ import annotations

from typing import Any

import orjson

from kerneltracer.analysis.structured_logs.rendering.base import (
    IndexLink,
    ModuleOutput,
    OutputModule,
    RenderContext,
)
from kerneltracer.analysis.structured_logs.rendering.html import render_page

_SYMBOLIC_TYPES = (
    "propagate_real_tensors_provenance",
    "guard_added",
    "expression_created",
    "create_unbacked_symbol",
    "symbolic_shape_specialization",
    "guard_added_fast",
)


def _text(meta: Any) -> str:
    if isinstance(meta, dict):
        meta = {k: v for k, v in meta.items() if k not in ("stack", "user_stack", "frame_locals")}
    return orjson.dumps(meta).decode()[:2000]


class SymbolicShapeModule(OutputModule):
    name = "symbolic_shapes"
    description = "symbolic shape guards and provenance per compile id"
    in_export = True
    envelope_types = _SYMBOLIC_TYPES

    def generate(self, ctx: RenderContext) -> ModuleOutput:
        per: dict[str, dict[str, list[dict[str, Any]]]] = {}
        display: dict[str, str] = {}
        for etype in _SYMBOLIC_TYPES:
            for e in ctx.iter_type(etype):
                display[e["compile_id"]] = e["display_id"]
                row = {"lineno": e.get("lineno"), "text": _text(e.get("metadata"))}
                per.setdefault(e["compile_id"], {}).setdefault(etype, []).append(row)
        out = ModuleOutput()
        for key, sections in per.items():
            out_dir = ctx.summaries.get(key, {}).get("output_dir", key)
            rel = f"{out_dir}/symbolic_shapes.html"
            page = render_page(
                "symbolic.html.j2",
                title="Symbolic shapes",
                compile_id=display[key],
                sections=list(sections.items()),
            )
            out.files.append(ctx.write(rel, page))
            out.index_links.append(IndexLink(f"symbolic shapes {display[key]}", rel))
        if ctx.config.export:
            self._export_pages(ctx, out)
        return out

    @staticmethod
    def _export_pages(ctx: RenderContext, out: ModuleOutput) -> None:
        """Export mode: tlparse's numbered symbolic_guard_information pages."""
        for etype, e, art in ctx.artifacts(("guard_added", "propagate_real_tensors_provenance")):
            rows = [{"lineno": e.get("lineno"), "text": _text(e.get("metadata"))}]
            page = render_page(
                "symbolic.html.j2",
                title="Symbolic guard",
                compile_id=e["display_id"],
                sections=[(etype, rows)],
            )
            out.files.append(ctx.write(art.url, page))
