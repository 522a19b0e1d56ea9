"""Compilation metrics pages and the failures & restarts table."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping
from html import escape
from typing import Any

from jinja2.utils import htmlsafe_json_dumps
from markupsafe import Markup
from markupsafe import escape as html_escape

from kerneltracer.analysis.structured_logs.rendering.base import (
    BY_COMPILE_ID,
    ArtifactPages,
    ModuleOutput,
    OutputModule,
    RenderContext,
    by_type,
)
from kerneltracer.analysis.structured_logs.rendering.html import render_page
from kerneltracer.analysis.structured_logs.rendering.plan import Artifact
from kerneltracer.analysis.structured_logs.rendering.stacks import (
    StackTrie,
    frame_key,
    trim_dynamo_frames,
)

_METRIC_TYPES = (
    "compilation_metrics",
    "bwd_compilation_metrics",
    "aot_autograd_backward_compilation_metrics",
)


def _by_compile(ctx: RenderContext, etype: str) -> dict[str, list[dict[str, Any]]]:
    index: dict[str, list[dict[str, Any]]] = {}
    for e in ctx.iter_type(etype):
        index.setdefault(e["compile_id"], []).append(e.get("metadata") or {})
    return index


class _EarlierArtifacts:
    """Per compile id, the artifact list items written before a given log position.

    A metrics page lists every file its compile id produced so far (as tlparse does); on a
    long log with many recompiles that is quadratic, so the items are escaped once per
    artifact and each page joins a prefix of them.
    """

    def __init__(self, ctx: RenderContext) -> None:
        self.ctx = ctx
        self._cache: dict[str, tuple[list[int], list[str]]] = {}

    def before(self, key: str, seq: int) -> Markup:
        if key not in self._cache:
            arts = [a for a in self.ctx.plan.by_compile.get(key, []) if not a.is_link]
            items = [
                f'<li><a href="{escape(a.url.rsplit("/", 1)[-1])}">'
                f"{escape(a.name.rsplit('/', 1)[-1])}</a> {escape(a.suffix)}</li>"
                for a in arts
            ]
            self._cache[key] = ([a.seq for a in arts], items)
        seqs, items = self._cache[key]
        return Markup("".join(items[: bisect_left(seqs, seq)]))


def _rows_html(meta: dict[str, Any]) -> Markup:
    """The metrics table's rows, one ``<tr>`` per key in key order.

    Built here rather than in the template: a page has ~60 rows and jinja's per-row tests
    and filters were a third of a render's page-building time on a long log.
    """
    rows = []
    for key, value in sorted(meta.items()):
        if value is None:
            cell = ""
        elif isinstance(value, float):
            cell = f"{value:.3f}"
        elif isinstance(value, int):  # bools too: neither needs escaping
            cell = str(value)
        elif isinstance(value, Mapping) or (_iterable(value) and not isinstance(value, str)):
            cell = f"<code>{htmlsafe_json_dumps(value, sort_keys=True)}</code>"
        else:
            cell = html_escape(value)
        rows.append(f"<tr><th>{html_escape(key)}</th><td>{cell}</td></tr>\n")
    return Markup("".join(rows))


def _iterable(value: object) -> bool:
    try:
        iter(value)  # type: ignore[call-overload]
    except TypeError:
        return False
    return True


def _meta(entry: dict[str, Any]) -> dict[str, Any]:
    meta = entry.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _collapsed_key(key: str) -> str:
    """by_compile_id key with the attempt folded to 0 (stacks are logged per frame compile)."""
    head, sep, _ = key.rpartition("_")
    return f"{head}_0" if sep and not key.startswith("_") else key


class CompilationMetricsModule(ArtifactPages):
    name = "compilation_metrics"
    description = "per-compile metrics pages"
    inputs = (BY_COMPILE_ID, by_type("dynamo_start"))
    envelope_types = _METRIC_TYPES

    def begin(self, ctx: RenderContext) -> None:
        self._stacks = {e["compile_id"]: e for e in ctx.iter_type("dynamo_start")}
        self._specs = _by_compile(ctx, "symbolic_shape_specialization")
        self._fast = _by_compile(ctx, "guard_added_fast")
        self._earlier = _EarlierArtifacts(ctx)

    def page(self, ctx: RenderContext, etype: str, entry: dict[str, Any], art: Artifact) -> str:
        key = entry["compile_id"]
        first = etype == "compilation_metrics"
        return render_page(
            "metrics.html.j2",
            title=etype.replace("_", " ").capitalize(),
            compile_id=entry["display_id"],
            stack_html=self._stack_html(ctx, self._stacks.get(_collapsed_key(key))),
            rows_html=_rows_html(_meta(entry)),
            artifacts=self._earlier.before(key, entry["seq"]),
            specializations=self._specs.get(key, []) if first else [],
            guards_added=self._fast.get(key, []) if first else [],
        )

    @staticmethod
    def _stack_html(ctx: RenderContext, start: dict[str, Any] | None) -> str:
        if not start or not isinstance(start.get("metadata"), dict):
            return ""
        frames = start["metadata"].get("stack")
        if not isinstance(frames, list):
            return ""
        trie = StackTrie()
        trie.insert(
            trim_dynamo_frames(
                [frame_key(f, ctx.string_table) for f in frames if isinstance(f, dict)]
            ),
            None,
        )
        return trie.html("Stack", open_=False)


class FailuresModule(OutputModule):
    name = "failures"
    description = "failures_and_restarts.html"
    envelope_types = ("compilation_metrics",)

    def generate(self, ctx: RenderContext) -> ModuleOutput:
        rows = []
        for entry in ctx.iter_type("compilation_metrics"):
            meta = _meta(entry)
            arts = ctx.plan.files_for(entry["seq"], "compilation_metrics")
            url = arts[0].url if arts else ""
            for reason in meta.get("restart_reasons") or []:
                rows.append(
                    {
                        "compile_id": entry["display_id"],
                        "url": url,
                        "kind": "Restart",
                        "reason": str(reason),
                    }
                )
            if meta.get("fail_type") is not None:
                reason = (
                    f"{meta.get('fail_type')}: {meta.get('fail_reason')} "
                    f"({meta.get('fail_user_frame_filename') or 'N/A'}:"
                    f"{meta.get('fail_user_frame_lineno') or 0})"
                )
                rows.append(
                    {
                        "compile_id": entry["display_id"],
                        "url": url,
                        "kind": "Failure",
                        "reason": reason,
                    }
                )
        rel = ctx.write(
            "failures_and_restarts.html",
            render_page("failures.html.j2", title="Failures", rows=rows),
        )
        return ModuleOutput.linked(rel, "Failures and restarts", f"({len(rows)})")
