"""The render modules' shared skeleton (rendering/base.py) and their selection."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from kerneltracer.analysis.structured_logs.rendering.base import (
    BY_COMPILE_ID,
    ArtifactPages,
    RenderConfig,
    RenderContext,
    by_type,
)
from kerneltracer.analysis.structured_logs.rendering.plan import Artifact, Plan
from kerneltracer.analysis.structured_logs.rendering.registry import MODULES, select_modules
from kerneltracer.errors import UsageError


class _Echo(ArtifactPages):
    name = "echo"
    envelope_types = ("a", "b")

    def begin(self, ctx: RenderContext) -> None:
        self.prefix = "page of "

    def page(
        self, ctx: RenderContext, etype: str, entry: dict[str, Any], art: Artifact
    ) -> str | None:
        return None if entry["payload"] == "skip" else f"{self.prefix}{etype} {entry['payload']}"


def _context(tmp_path: Path) -> RenderContext:
    inter, out = tmp_path / "inter", tmp_path / "out"
    (inter / "by_type").mkdir(parents=True)
    rows = {"a": [(1, "x"), (2, "skip")], "b": [(3, "y")]}
    for etype, entries in rows.items():
        lines = [orjson.dumps({"seq": seq, "payload": p}) for seq, p in entries]
        (inter / "by_type" / f"{etype}.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    ctx = RenderContext(inter, out, RenderConfig())
    plan = Plan()
    for seq, etype in ((1, "a"), (2, "a"), (3, "b")):
        plan.by_seq[seq] = [Artifact(seq, etype, "0_0_0", f"0_0_0/{etype}_{seq}.txt", etype, seq)]
    ctx.__dict__["plan"] = plan  # the plan of a parsed log, built by hand
    return ctx


def test_artifact_pages_writes_one_file_per_artifact_and_skips_none(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    module = _Echo()
    assert module.required_inputs() == [BY_COMPILE_ID, by_type("a"), by_type("b")]
    out = module.generate(ctx)
    ctx.flush()
    assert out.files == ["0_0_0/a_1.txt", "0_0_0/b_3.txt"]
    assert (ctx.out / "0_0_0" / "a_1.txt").read_text() == "page of a x"
    assert not (ctx.out / "0_0_0" / "a_2.txt").exists()


def test_modules_are_chosen_by_their_own_flags_in_run_order() -> None:
    normal = [m.name for m in select_modules(export=False)]
    export = [m.name for m in select_modules(export=True)]
    assert normal == [n for n in MODULES if n != "export"] and normal[-1] == "index"
    assert export == ["compile_directory", "graphs", "chromium", "raw", "symbolic_shapes", "export"]
    assert [m.name for m in select_modules(False, ["index", "guards"])] == ["guards", "index"]
    assert "guards" not in [m.name for m in select_modules(False, skip=["guards"])]
    with pytest.raises(UsageError, match=r"unknown render module 'nope' \(valid: chromium, "):
        select_modules(False, ["nope"])


def test_file_writer_writes_every_batch_and_reraises_the_first_failure(tmp_path: Path) -> None:
    from kerneltracer.analysis.structured_logs.rendering.filewriter import _BATCH_FILES, FileWriter

    writer = FileWriter()
    count = 2 * _BATCH_FILES + 3  # two full batches and a partial one handed over by close
    for i in range(count):
        writer.write(tmp_path / f"f{i}.txt", f"page {i}".encode())
    writer.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"f{i}.txt" for i in range(count))
    assert (tmp_path / f"f{count - 1}.txt").read_text() == f"page {count - 1}"

    failing = FileWriter()
    failing.write(tmp_path / "missing" / "a.txt", b"x")  # its folder was never made
    failing.write(tmp_path / "b.txt", b"y")
    with pytest.raises(FileNotFoundError):
        failing.close()


def test_metrics_rows_escape_what_the_log_says() -> None:
    from kerneltracer.analysis.structured_logs.rendering.modules.metrics import _rows_html

    html = str(
        _rows_html(
            {
                "<b>key": "</td><script>x</script>",
                "list": ["<i>", "a'b"],
                "map": {"z": 1, "a": "&"},
                "ratio": 0.12345,
                "none": None,
                "flag": True,
            }
        )
    )
    assert "<script>" not in html and "<b>" not in html and "<i>" not in html
    assert (
        "<tr><th>&lt;b&gt;key</th><td>&lt;/td&gt;&lt;script&gt;x&lt;/script&gt;</td></tr>" in html
    )
    assert '<code>{"a": "\\u0026", "z": 1}</code>' in html  # keys sorted, as jinja's tojson
    assert "<td>0.123</td>" in html and "<th>none</th><td></td>" in html
    assert "<th>flag</th><td>True</td>" in html
    assert html.index("<th>&lt;b&gt;key") < html.index("<th>flag") < html.index("<th>list")
