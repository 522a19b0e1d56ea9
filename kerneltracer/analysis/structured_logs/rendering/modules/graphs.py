"""Graph viewer: graph dumps, generic artifacts and exported programs as plain files.

Payloads are written as they were logged (``.txt``); JSON artifacts are pretty-printed
(falling back to the raw text when they do not parse, as tlparse does).
"""

from __future__ import annotations

from html import escape

import orjson

from kerneltracer.analysis.structured_logs.envelopes import SENTINEL_GRAPH_TYPES
from kerneltracer.analysis.structured_logs.rendering.base import (
    ModuleOutput,
    OutputModule,
    RenderContext,
)
from kerneltracer.analysis.structured_logs.rendering.highlight import CSS, highlight_python
from kerneltracer.analysis.structured_logs.rendering.html import render_page

_GRAPH_TYPES = (
    "dynamo_output_graph",
    *SENTINEL_GRAPH_TYPES,
    "graph_dump",
    "optimize_ddp_split_child",
    "artifact",
    "dump_file",
    "exported_program",
)


class GraphViewerModule(OutputModule):
    name = "graphs"
    description = "graph dumps, artifacts and exported programs as files"
    in_export = True
    envelope_types = _GRAPH_TYPES

    def generate(self, ctx: RenderContext) -> ModuleOutput:
        out = ModuleOutput()
        for etype, entry, art in ctx.artifacts(_GRAPH_TYPES):
            payload = entry.get("payload") or ""
            out.files.append(ctx.write(art.url, _content(etype, art.url, payload)))
            if art.readable_url:
                out.files.append(ctx.write(art.readable_url, _stack_traces_html(payload)))
        return out


def _content(etype: str, url: str, payload: str) -> str | bytes:
    if etype == "dump_file":
        return render_page(
            "code.html.j2",
            title=url,
            subtitle="dump_file",
            css=CSS,
            code_html=highlight_python(payload),
        )
    if url.endswith(".json"):
        try:
            return orjson.dumps(orjson.loads(payload), option=orjson.OPT_INDENT_2)
        except orjson.JSONDecodeError:
            return payload
    return payload


def _stack_traces_html(payload: str) -> str:
    try:
        data = orjson.loads(payload)
    except orjson.JSONDecodeError:
        return ""
    parts = ["<html><body>\n"]
    if isinstance(data, dict):
        for kernel, traces in data.items():
            parts.append(f"<h3>{escape(str(kernel))}</h3>\n")
            for t in traces if isinstance(traces, list) else []:
                if isinstance(t, str):
                    parts.append(
                        f"<pre>{escape(t.replace(chr(92) + 'n', chr(10)).rstrip(chr(10)))}</pre>\n"
                    )
    parts.append("</body></html>\n")
    return "".join(parts)
