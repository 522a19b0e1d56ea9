"""The report of a real run, loaded by Debian's headless chromium from a local HTTP server.

The run is real (``kerneltracer run`` on tiny models, one of them failing, one whose display
id carries a ``<script>``), then ``analyze`` and ``report`` as a user would. The browser
must show no console error on any page, every link must resolve, the screenshot must not
be blank, and the ``<script>`` id must appear as text without running.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import threading
from collections.abc import Iterator
from html.parser import HTMLParser
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.error import HTTPError
from urllib.parse import urldefrag, urljoin, urlsplit
from urllib.request import urlopen

import pytest

from tests.conftest import REPO_ROOT, clean_env, require
from tests.helpers import kt, make_faulty_model, write_config
from tests.report.cdp import CHROMIUM, Browser
from tests.report.png import pixel_stats

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

EVIL_NAME = "tiny<script>document.title='PWNED'"
TRACERS = ["torch_dispatch", "torch_profiler"]


@pytest.fixture(scope="module")
def chromium() -> Path:
    if not CHROMIUM.exists():
        script = REPO_ROOT / "scripts" / "install-chromium.sh"
        subprocess.run(["sh", str(script)], capture_output=True, timeout=900, check=False)
    require(CHROMIUM.exists(), f"{CHROMIUM} (scripts/install-chromium.sh installs it, as root)")
    return CHROMIUM


@pytest.fixture(scope="module")
def reported_run(tmp_path_factory: pytest.TempPathFactory, tiny_models: dict[str, Path]) -> Path:
    root = tmp_path_factory.mktemp("browser-run")
    evil = root / "models" / EVIL_NAME
    shutil.copytree(tiny_models["tiny-gpt2"], evil)
    faulty = make_faulty_model(root / "models", "exception", name="faulty")
    cfg = write_config(
        root / "config.yaml",
        [
            {"path": str(tiny_models["tiny-llama"])},
            {"path": str(evil)},
            {"path": str(faulty), "trust_remote_code": True},
        ],
        defaults={"tracers": TRACERS, "seq_len": 8},
    )
    env = clean_env(root)
    run_dir = root / "run"
    ran = kt("run", str(cfg), "--jobs", "2", env=env, timeout=300)
    assert ran.returncode == 1, ran.stdout + ran.stderr  # the faulty model's jobs fail
    analysed = kt("analyze", str(run_dir), env=env, timeout=300)
    assert analysed.returncode == 0, analysed.stdout + analysed.stderr
    reported = kt("report", str(run_dir), env=env, timeout=120)
    assert reported.returncode == 0, reported.stdout + reported.stderr
    assert "4 ok, 2 failed" in reported.stdout
    return run_dir


@pytest.fixture(scope="module")
def server(reported_run: Path) -> Iterator[str]:
    handler = functools.partial(_QuietHandler, directory=str(reported_run))
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def browser(chromium: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    tmp = tmp_path_factory.mktemp("chromium")
    b = Browser(tmp / "profile", tmp / "chromium.log")
    try:
        yield b
    finally:
        b.close()


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "a" and values.get("href"):
            self.hrefs.append(str(values["href"]))
        if values.get("id"):
            self.ids.add(str(values["id"]))


def _report_pages(base: str) -> dict[str, _Page]:
    """Crawl the report's own pages (index, coverage, model pages) from the index."""
    start = urljoin(base, "report/index.html")
    pages: dict[str, _Page] = {}
    queue = [start]
    while queue:
        url = queue.pop()
        if url in pages:
            continue
        parsed = _Page()
        with urlopen(url, timeout=10) as resp:
            parsed.feed(resp.read().decode())
        pages[url] = parsed
        for href in parsed.hrefs:
            target = urldefrag(urljoin(url, href))[0]
            if target.startswith(urljoin(base, "report/")) and target.endswith(".html"):
                queue.append(target)
    return pages


def test_every_link_on_every_report_page_resolves(server: str) -> None:
    pages = _report_pages(server)
    assert len(pages) == 7  # index, coverage, readiness, compile health, three model pages
    checked: dict[str, int] = {}
    for url, page in pages.items():
        for href in page.hrefs:
            assert not urlsplit(href).scheme, f"{url}: absolute link {href}"
            target, fragment = urldefrag(urljoin(url, href))
            if target not in checked:
                try:
                    with urlopen(target, timeout=10) as resp:
                        checked[target] = resp.status
                except HTTPError as exc:
                    checked[target] = exc.code
            assert checked[target] == 200, f"{url}: {href} -> {checked[target]}"
            if fragment and target in pages:
                assert fragment in pages[target].ids, f"{url}: {href} names no anchor"
    linked = "\n".join(checked)
    # The links a reader needs are really there: worker logs, analysis reports, outputs.
    assert "/worker.log" in linked and "/analysis/timeline/" in linked
    assert "/dispatch_summary.json" in linked and "/report/coverage.html" in linked


def test_pages_load_without_console_errors(server: str, browser: Browser) -> None:
    urls = sorted(_report_pages(server))
    for url in urls:
        load = browser.load(url)
        assert load.errors == [], f"{url}: {load.errors}"
        assert browser.evaluate("document.scripts.length") == 1, url


def test_script_model_id_is_text_and_never_runs(server: str, browser: Browser) -> None:
    browser.load(urljoin(server, "report/index.html"))
    assert browser.evaluate("document.title") != "PWNED"
    assert browser.evaluate("document.body.innerText").count(EVIL_NAME) >= 1
    dom = browser.evaluate("document.documentElement.outerHTML")
    assert "tiny&lt;script&gt;document.title='PWNED'" in dom
    assert "<script>document.title" not in dom
    # The model page of that model too (its slug is filesystem-safe, its title is the id).
    (href,) = browser.evaluate(
        "[...document.querySelectorAll('#grid tbody th a')]"
        ".filter(a => a.textContent.includes('PWNED')).map(a => a.getAttribute('href'))"
    )
    assert "<" not in href and "'" not in href
    load = browser.load(urljoin(server, "report/" + href))
    assert load.errors == []
    assert browser.evaluate("document.querySelector('h1').textContent") == EVIL_NAME
    assert browser.evaluate("document.title").startswith(EVIL_NAME)


def test_grid_sorts_and_filters(server: str, browser: Browser) -> None:
    browser.load(urljoin(server, "report/index.html"))
    names = "[...document.querySelectorAll('#grid tbody tr')].map(r => r.cells[0].textContent)"
    visible = "[...document.querySelectorAll('#grid tbody tr')].filter(r => !r.hidden).length"
    browser.evaluate("document.querySelector('#grid thead th').click()")
    ascending = browser.evaluate(names)
    browser.evaluate("document.querySelector('#grid thead th').click()")
    assert browser.evaluate(names) == ascending[::-1] and len(ascending) == 3
    # Sorting a tracer column puts the failed job first.
    browser.evaluate("document.querySelectorAll('#grid thead th')[2].click()")
    assert browser.evaluate(names)[0] == "faulty"
    browser.evaluate(
        "var i = document.querySelector('input[data-filter-for=grid]'); i.value = 'pwned';"
        "i.dispatchEvent(new Event('input'))"
    )
    assert browser.evaluate(visible) == 1
    browser.evaluate(
        "i.value = ''; i.dispatchEvent(new Event('input'));"
        "var s = document.querySelector('select[data-status-filter-for=grid]'); s.value = 'failed';"
        "s.dispatchEvent(new Event('input'))"
    )
    assert browser.evaluate(visible) == 1
    assert "1 of 3 shown" in browser.evaluate(
        "document.querySelector('[data-count-for=grid]').textContent"
    )


def test_screenshot_is_not_blank(server: str, browser: Browser, tmp_path: Path) -> None:
    browser.load(urljoin(server, "report/index.html"))
    png = browser.screenshot()
    (tmp_path / "index.png").write_bytes(png)
    colours, variance = pixel_stats(png)
    assert colours > 50 and variance > 100, (colours, variance)


def test_coverage_page_shows_the_dispatch_ops(server: str, browser: Browser) -> None:
    load = browser.load(urljoin(server, "report/coverage.html"))
    assert load.errors == []
    ops = browser.evaluate(
        "[...document.querySelectorAll('#matrix tbody tr')].map(r => r.cells[0].textContent)"
    )
    assert "aten.embedding.default" in ops and len(ops) > 10
    headers = browser.evaluate(
        "[...document.querySelectorAll('#matrix thead th')].map(h => h.textContent)"
    )
    assert EVIL_NAME in headers and "tiny-llama" in headers  # the faulty model has no ok job
