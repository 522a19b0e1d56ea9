"""``compile_directory.json`` in tlparse's format: display id → numbered artifacts."""

from __future__ import annotations

import orjson

from kerneltracer.analysis.structured_logs.rendering.base import (
    BY_COMPILE_ID,
    MANIFEST,
    ModuleOutput,
    OutputModule,
    RenderContext,
)


class CompileDirectoryModule(OutputModule):
    name = "compile_directory"
    description = "compile_directory.json (tlparse format)"
    in_export = True
    inputs = (MANIFEST, BY_COMPILE_ID)

    def generate(self, ctx: RenderContext) -> ModuleOutput:
        directory = {
            summary["display_id"]: {
                "artifacts": [a.as_json() for a in ctx.plan.by_compile.get(key, [])]
            }
            for key, summary in ctx.summaries.items()
        }
        data = orjson.dumps(directory, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)
        return ModuleOutput.linked(ctx.write("compile_directory.json", data + b"\n"))
