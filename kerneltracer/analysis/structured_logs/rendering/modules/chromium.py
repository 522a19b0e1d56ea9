"""Chromium trace events, passed through as ``chromium_events.json`` (Perfetto-loadable)."""

from __future__ import annotations

from kerneltracer.analysis.structured_logs.rendering.base import (
    RAW,
    ModuleOutput,
    OutputModule,
    RenderContext,
    by_type,
)


class ChromiumModule(OutputModule):
    name = "chromium"
    description = "chromium_events.json passthrough"
    in_export = True
    inputs = (by_type("chromium_events"),)

    def generate(self, ctx: RenderContext) -> ModuleOutput:
        rel = ctx.publish(ctx.inter / "by_type" / "chromium_events.json", "chromium_events.json")
        if not ctx.manifest.get("envelope_counts", {}).get("chromium_event"):
            return ModuleOutput([rel])  # an empty array, as tlparse writes
        return ModuleOutput.linked(rel, detail="(open in ui.perfetto.dev)")


class RawModule(OutputModule):
    name = "raw"
    description = "raw.jsonl (string table + every envelope but chromium and str)"
    in_export = True
    inputs = (RAW,)

    def generate(self, ctx: RenderContext) -> ModuleOutput:
        return ModuleOutput.linked(ctx.publish(ctx.inter / "raw.jsonl", "raw.jsonl"))
