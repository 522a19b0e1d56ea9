"""Export mode index: the issues torch.export hit (tlparse ``--export``)."""

from __future__ import annotations

from typing import Any

from kerneltracer.analysis.structured_logs.rendering.base import (
    ModuleOutput,
    OutputModule,
    RenderContext,
)
from kerneltracer.analysis.structured_logs.rendering.html import render_page

_EXPORT_TYPES = (
    "missing_fake_kernel",
    "mismatched_fake_kernel",
    "exported_program",
    "guard_added",
    "propagate_real_tensors_provenance",
)


class ExportModule(OutputModule):
    name = "export"
    description = "export-mode index.html"
    in_normal = False
    in_export = True
    envelope_types = _EXPORT_TYPES

    def generate(self, ctx: RenderContext) -> ModuleOutput:
        failures: list[dict[str, Any]] = []
        for etype, kind in (
            ("guard_added", "Guard Evaluated"),
            ("propagate_real_tensors_provenance", "Data Dependent Error"),
        ):
            for e in ctx.iter_type(etype):
                arts = ctx.plan.files_for(e["seq"], etype)
                if arts:
                    meta = e.get("metadata") or {}
                    failures.append(
                        {
                            "seq": e["seq"],
                            "kind": kind,
                            "reason": str(meta.get("expr")),
                            "url": arts[0].url,
                        }
                    )
        for etype, kind in (
            ("missing_fake_kernel", "Missing Fake Kernel"),
            ("mismatched_fake_kernel", "Mismatched Fake Kernel"),
        ):
            for e in ctx.iter_type(etype):
                meta = e.get("metadata") or {}
                reason = f"torch.ops.{meta.get('op')}" + (
                    f": {meta.get('reason')}" if meta.get("reason") else ""
                )
                failures.append({"seq": e["seq"], "kind": kind, "reason": reason, "url": ""})
        failures.sort(key=lambda f: f["seq"])
        program = next(
            (
                a.url
                for arts in ctx.plan.by_compile.values()
                for a in arts
                if a.type == "exported_program"
            ),
            "",
        )
        page = render_page(
            "export.html.j2", title="Export", failures=failures, exported_program_url=program
        )
        return ModuleOutput([ctx.write("index.html", page)])
