"""The pages: untrusted text escaped, links relative and resolvable, the CSP matches the script."""

from __future__ import annotations

import base64
import hashlib
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import orjson
import pytest

from kerneltracer.corpus.model import Signature
from kerneltracer.corpus.readiness import assess
from kerneltracer.corpus.readiness_export import write_readiness
from kerneltracer.corpus.support import Support
from kerneltracer.report import build_report
from kerneltracer.report.views import fmt_duration, fmt_mib, fmt_size, page_name, phase_bar
from tests.report.runs import make_run, status
from tests.support.compile_logs import SynthModel, write_log

EVIL = '<script>document.title="pwned"</script><img src=x onerror=alert(1)>'


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.hrefs += [v for k, v in attrs if k == "href" and v]
        self._in_script = tag == "script"
        if tag == "script":
            self.scripts.append("")

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts[-1] += data


def _parse(page: Path) -> _Links:
    parser = _Links()
    parser.feed(page.read_text())
    return parser


@pytest.fixture
def evil_run(tmp_path: Path) -> Path:
    dispatch = status(
        "evil/torch_dispatch",
        EVIL,
        outputs=[{"path": "dispatch_summary.json", "size": 1, "sha256": "0", "mtime_ns": 0}],
    )
    failing = status("evil/torch_profiler", EVIL, status="failed", reason=f"RuntimeError: {EVIL}")
    log = {"path": "torch_trace/t.log", "kind": "torch_trace_log", "size": 1, "sha256": "0"}
    compiled = status("evil/torch_compile", EVIL, outputs=[{**log, "mtime_ns": 0}])
    run = make_run(
        tmp_path / "run",
        {
            "evil/torch_dispatch": dispatch,
            "evil/torch_profiler": failing,
            "evil/torch_compile": compiled,
        },
    )
    (run / "jobs/evil/torch_compile/torch_trace").mkdir(parents=True)
    write_log(run / "jobs/evil/torch_compile/torch_trace/t.log", SynthModel(EVIL))
    summary = {"ops": {f"aten.{EVIL}.default": {"calls": 3, "signatures": 1}}}
    (run / "jobs/evil/torch_dispatch/dispatch_summary.json").write_bytes(orjson.dumps(summary))
    sig = Signature("0", f"aten.{EVIL}.default", [], {}, [], {"forward": 3}, {EVIL: 3})
    write_readiness(assess([sig], Support(EVIL, lambda op: False)), run / "report/readiness")
    return run


def test_untrusted_text_is_escaped_everywhere(evil_run: Path) -> None:
    result = build_report(evil_run)
    assert not result.warnings
    pages = {p.name: p.read_text() for p in result.pages}
    assert set(pages) == {
        "index.html",
        "evil.html",
        "coverage.html",
        "readiness.html",
        "ops.html",
        "compile_health.html",
        "ranks.html",
    }
    for name, html in pages.items():
        assert "<script>document.title" not in html, name
        assert "<img src=x" not in html, name
        # No attribution and no parallel job in this run: these pages name no model.
        if name not in ("ops.html", "ranks.html"):
            assert "&lt;script&gt;document.title=" in html, name
        # Exactly one script element per page: ours.
        assert (
            len(
                _parse(
                    Path(result.out_dir / ("models/" if name == "evil.html" else "") / name)
                ).scripts
            )
            == 1
        )
    assert "RuntimeError: &lt;script&gt;" in pages["evil.html"]
    assert 'title="&lt;script&gt;document.title=&#34;pwned&#34;' in pages["index.html"]


def test_inline_script_is_the_only_one_the_csp_allows(evil_run: Path) -> None:
    result = build_report(evil_run)
    for page in result.pages:
        parsed = _parse(page)
        (script,) = parsed.scripts
        digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
        csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page.read_text())
        assert csp is not None
        assert f"script-src 'sha256-{digest}'" in csp.group(1)
        assert "default-src 'none'" in csp.group(1)


def test_every_link_is_relative_and_resolves_on_disk(evil_run: Path, tmp_path: Path) -> None:
    for out in (None, tmp_path / "elsewhere" / "report"):
        result = build_report(evil_run, out)
        for page in result.pages:
            for href in _parse(page).hrefs:
                parts = urlsplit(href)
                assert not parts.scheme and not parts.netloc and not href.startswith("/"), href
                if not parts.path:
                    continue  # in-page anchor
                target = (page.parent / unquote(parts.path)).resolve()
                assert target.exists(), f"{page.name}: {href}"


def test_report_is_rebuilt_atomically_and_drops_pages_of_removed_models(tmp_path: Path) -> None:
    run = make_run(
        tmp_path / "run",
        {
            "a/torch_dispatch": status("a/torch_dispatch", "a"),
            "b/torch_dispatch": status("b/torch_dispatch", "b"),
        },
    )
    build_report(run)
    assert (run / "report/models/b.html").exists()
    make_run(run, {"a/torch_dispatch": status("a/torch_dispatch", "a")})
    shutil.rmtree(run / "jobs" / "b")
    build_report(run)
    assert not (run / "report/models/b.html").exists()
    assert not list((run / "report").rglob("*.tmp"))


def test_summary_and_jobs_csv(tmp_path: Path) -> None:
    run = make_run(
        tmp_path / "run",
        {
            "a/torch_dispatch": status("a/torch_dispatch", "a"),
            "a/torch_profiler": status("a/torch_profiler", "a", status="oom", reason="MemoryError"),
            "b/torch_dispatch": None,
        },
        finished=False,
    )
    result = build_report(run)
    summary = orjson.loads((result.out_dir / "run_summary.json").read_bytes())
    assert summary["counts"] == {"ok": 1, "oom": 1, "pending": 1}
    assert summary["in_progress"] is True and summary["models"] == 2
    assert summary["problems"] == [
        {"key": "a/torch_profiler", "status": "oom", "reason": "MemoryError"}
    ]
    lines = (result.out_dir / "jobs.csv").read_text().splitlines()
    assert lines[0].startswith("key,model,slug,tracer,mode,status,duration_s")
    assert len(lines) == 4 and "a/torch_profiler,a,a,torch_profiler,eval,oom" in lines[2]
    index = result.index.read_text()
    assert "in progress" in index and 'data-status="pending"' in index


def test_formatting_helpers() -> None:
    assert fmt_duration(None) == "–" and fmt_duration(0.25) == "250ms"
    assert fmt_duration(5.49) == "5.5s" and fmt_duration(600) == "10m00s"
    assert fmt_duration(3 * 3600 + 61) == "3h01m"
    assert (
        fmt_mib(None) == "–" and fmt_mib(300 << 20) == "300 MiB" and fmt_mib(3 << 30) == "3.0 GiB"
    )
    assert fmt_size(12) == "12 B" and fmt_size(2048) == "2.0 KiB" and fmt_size(5 << 30) == "5.0 GiB"
    assert page_name("tiny-gpt2") == "tiny-gpt2.html"
    odd = page_name("a b/<c>")
    assert re.fullmatch(r"[A-Za-z0-9._-]+\.html", odd) and odd != page_name("a b/<d>")


def test_phase_bar_accounts_for_all_of_the_duration(tmp_path: Path) -> None:
    from kerneltracer.report.collect import collect_run

    run = make_run(
        tmp_path / "run", {"a/torch_dispatch": status("a/torch_dispatch", "a", duration_s=4.4)}
    )
    bar = phase_bar(collect_run(run).jobs[0])
    assert bar.total == 4.4
    assert {s.name for s in bar.segments} == {"load", "warmup", "trace", "write", "other"}
    assert abs(sum(s.percent for s in bar.segments) - 100) < 0.05
