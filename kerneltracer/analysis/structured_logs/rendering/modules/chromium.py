"""Chromium trace events, passed through as ``chromium_events.json`` (Perfetto-loadable)."""

from __future__ import annotations

from kerneltracer.analysis.structured_logs.rendering.base import (
    IndexLink,
    IntermediateFile,
    ModuleOutput,
    OutputModule,
    RenderContext,
    by_type,
)


class ChromiumModule(OutputModule):
    name = "chromium"
    description = "chromium_events.json passthrough"

    def required_inputs(self) -> list[IntermediateFile]:
        return [by_type("chromium_events")]

    def generate(self, ctx: RenderContext) -> ModuleOutput:
        ctx.publish(ctx.inter / "by_type" / "chromium_events.json", "chromium_events.json")
        if not ctx.manifest.get("envelope_counts", {}).get("chromium_event"):
            return ModuleOutput(["chromium_events.json"])  # an empty array, as tlparse writes
        link = IndexLink(
            "chromium_events.json", "chromium_events.json", "(open in ui.perfetto.dev)"
        )
        return ModuleOutput(["chromium_events.json"], [link])


class RawModule(OutputModule):
    name = "raw"
    description = "raw.jsonl (string table + every envelope but chromium and str)"

    def required_inputs(self) -> list[IntermediateFile]:
        from kerneltracer.analysis.structured_logs.rendering.base import RAW

        return [RAW]

    def generate(self, ctx: RenderContext) -> ModuleOutput:
        ctx.publish(ctx.inter / "raw.jsonl", "raw.jsonl")
        return ModuleOutput(["raw.jsonl"], [IndexLink("raw.jsonl", "raw.jsonl")])
