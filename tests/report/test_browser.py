"""The report of a real run, loaded by Debian's headless chromium from a local HTTP server.

The run is real (``kerneltracer run`` on tiny models, one of them failing, one whose display
id carries a ``<script>``), then ``analyze`` and ``report`` as a user would. The browser
must show no console error on any page, every link must resolve, the screenshot must not
be blank, and the ``<script>`` id must appear as text without running.
"""

from __future__ import annotations

import functools
import os
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
    assert len(pages) == 9  # index, coverage, readiness, ops, compile health, ranks, 3 models
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
    # Each model column: the model's id, then its mode · phase.
    headers = browser.evaluate(
        "[...document.querySelectorAll('#matrix thead th')].map(h => h.firstChild.textContent)"
    )
    assert EVIL_NAME in headers and "tiny-llama" in headers  # the faulty model has no ok job


# --- the demo, as `make demo` runs it, read from disk ---------------------------------------

DEMO_JOBS = 24
# The pages must-show 1 names, and the charts each must draw at least.
DEMO_PAGES = {
    "index.html": 4,  # timeline, durations, peak RSS, compile time by phase
    # top ops by time and by calls per variant (3), a profiled step per profiler job (2)
    "models/tiny-llama.html": 8,
    "coverage.html": 1,  # ops x models heatmap
    "readiness.html": 2,  # ready after each op, missing per model
}


@pytest.fixture(scope="module")
def demo_report(tmp_path_factory: pytest.TempPathFactory, tiny_models: dict[str, Path]) -> Path:
    """configs/demo.yaml (its model paths pointed at the session's tiny models), then the
    demo's analyze, readiness and report steps from the Makefile, into a temp dir."""
    import yaml

    root = tmp_path_factory.mktemp("demo")
    cfg = yaml.safe_load((REPO_ROOT / "configs" / "demo.yaml").read_text())
    for entry in cfg["models"]:
        entry["path"] = str(tiny_models[Path(entry["path"]).name])
    cfg["output_dir"] = str(root / "run")
    config = root / "demo.yaml"
    config.write_text(yaml.safe_dump(cfg))
    env = clean_env(root)
    run_dir = root / "run"
    steps = [
        ("run", str(config), "--jobs", "2"),
        ("analyze", str(run_dir)),
        *DEMO_READINESS,
        ("report", str(run_dir)),
    ]
    for step in steps:
        args = [a.replace("RUN_DIR", str(run_dir)) for a in step]
        done = kt(*args, env=env, timeout=600)
        assert done.returncode == 0, f"{args}: {done.stdout}{done.stderr}"
    return run_dir / "report"


def _demo_readiness() -> list[tuple[str, ...]]:
    # The readiness step exactly as the Makefile's demo target has it.
    makefile = (REPO_ROOT / "Makefile").read_text()
    (line,) = [ln for ln in makefile.splitlines() if "$(KT) readiness" in ln]
    return [tuple(line.split("$(KT)")[1].replace("runs/demo", "RUN_DIR").split())]


DEMO_READINESS = _demo_readiness()


# The demo fixture runs 24 jobs (three torch.compile ones) and their analyses: ~2-3 min on
# an idle 2-core machine, much more on a loaded one; the first test to use it pays for it.
@pytest.mark.timeout(2400)
def test_demo_pages_at_1400px(demo_report: Path, browser: Browser, tmp_path: Path) -> None:
    shots = Path(os.environ.get("KT_SCREENSHOT_DIR") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    for page, charts in DEMO_PAGES.items():
        url = (demo_report / page).as_uri()
        load = browser.load(url)
        assert load.errors == [], f"{page}: {load.errors}"
        # Opened from disk, and nothing else is asked for: no CDN, no font, no image.
        assert [r for r in load.requests if not r.startswith(("file:", "data:"))] == [], page
        assert browser.evaluate("window.innerWidth") == 1400
        width = browser.evaluate("document.documentElement.scrollWidth")
        assert width <= browser.evaluate("document.documentElement.clientWidth"), (page, width)
        drawn = browser.evaluate(
            "[...document.querySelectorAll('svg.chart')]"
            ".filter(s => s.querySelectorAll('rect').length > 0"
            " && s.getBoundingClientRect().width > 100).length"
        )
        assert drawn >= charts, (page, drawn)
        png = browser.screenshot(full_page=True)
        (shots / (page.replace("/", "_") + ".png")).write_bytes(png)
        colours, variance = pixel_stats(png)
        assert colours > 50 and variance > 100, (page, colours, variance)


def test_demo_grid_shows_all_24_jobs(demo_report: Path, browser: Browser) -> None:
    browser.load((demo_report / "index.html").as_uri())
    rows = browser.evaluate(
        "[...document.querySelectorAll('#grid tbody tr')].filter(r => !r.hidden)"
        ".map(r => [r.cells[0].textContent, r.cells[1].textContent, Number(r.dataset.jobs)])"
    )
    # One row per model variant: the decode and generate jobs of tiny-llama too.
    assert sorted((m, v) for m, v, _ in rows) == [
        ("tiny-bert", "eval · prefill"),
        ("tiny-gpt2", "eval · prefill"),
        ("tiny-llama", "eval · decode"),
        ("tiny-llama", "eval · generate"),
        ("tiny-llama", "eval · prefill"),
    ]
    assert sum(n for _, _, n in rows) == DEMO_JOBS
    # The unused print_aten alternatives are inside print_aten's cell, not columns.
    heads = browser.evaluate(
        "[...document.querySelectorAll('#grid thead th')].map(h => h.textContent)"
    )
    assert "print_aten" in heads and "print_aten_export" not in heads
    # Every job of the run has its section on its model page.
    sections = 0
    for model in ("tiny-llama", "tiny-gpt2", "tiny-bert"):
        browser.load((demo_report / "models" / f"{model}.html").as_uri())
        sections += browser.evaluate("document.querySelectorAll('section.job').length")
    assert sections == DEMO_JOBS


def test_demo_readiness_and_coverage_have_content(demo_report: Path, browser: Browser) -> None:
    browser.load((demo_report / "readiness.html").as_uri())
    assert browser.evaluate("document.querySelectorAll('#ranked tbody tr').length") > 0
    browser.load((demo_report / "coverage.html").as_uri())
    text = browser.evaluate("document.querySelector('main p').textContent")
    assert "across 3 models (5 model variants" in text
    # One op naming: dispatch overload names first, the profiler's name beside them.
    top = browser.evaluate(
        "[...document.querySelectorAll('#top tbody tr')].map(r => [r.cells[0].textContent,"
        " r.cells[1].textContent])"
    )
    assert top and all("::" not in op for op, _ in top)
    assert ("aten.mm.default", "aten::mm") in [tuple(t) for t in top]


def test_demo_track_view_zooms(demo_report: Path, browser: Browser) -> None:
    browser.load((demo_report / "models" / "tiny-llama.html").as_uri())
    # The visible range, and px per time unit of the longest span drawn whole (not cut at
    # an edge, and wide enough that rounding to 0.1 px does not matter).
    state = (
        "(() => { const s = document.querySelector('svg.zoomable');"
        " const [v0, v1] = s.getAttribute('data-view').split(' ').map(Number);"
        " const len = g => Number(g.dataset.e) - Number(g.dataset.s);"
        " const whole = [...s.querySelectorAll('g.span')].filter(g => g.style.display !== 'none'"
        " && Number(g.dataset.s) > v0 && Number(g.dataset.e) < v1);"
        " const g = whole.reduce((a, b) => len(b) > len(a) ? b : a);"
        " const w = Number(g.querySelector('rect').getAttribute('width'));"
        " return [v1 - v0, w / len(g)]; })()"
    )
    before_range, before_scale = browser.evaluate(state)
    browser.evaluate(
        "(() => { const s = document.querySelector('svg.zoomable');"
        " const b = s.getBoundingClientRect();"
        " for (let i = 0; i < 5; i++) s.dispatchEvent(new WheelEvent('wheel', {deltaY: -100,"
        " clientX: b.left + b.width / 2, clientY: b.top + 20, bubbles: true,"
        " cancelable: true})); })()"
    )
    after_range, after_scale = browser.evaluate(state)
    # Five wheel steps of 0.8: a third of the range, each span drawn three times as wide.
    assert after_range == pytest.approx(before_range * 0.8**5, rel=0.01)
    assert after_scale == pytest.approx(before_scale / 0.8**5, rel=0.05)
    browser.evaluate(
        "document.querySelector('svg.zoomable').dispatchEvent(new MouseEvent('dblclick'))"
    )
    assert browser.evaluate(state)[0] == pytest.approx(before_range)


def test_grid_of_1000_models_pages_and_filters(
    tmp_path_factory: pytest.TempPathFactory, browser: Browser
) -> None:
    from kerneltracer.report import build_report
    from tests.support.synthetic_run import make_synthetic_run

    run = tmp_path_factory.mktemp("thousand") / "run"
    make_synthetic_run(run, n_models=1000, tracers=("torch_dispatch", "torch_profiler"))
    index = build_report(run).index
    load = browser.load(index.as_uri())
    assert load.errors == []
    assert browser.evaluate("document.documentElement.scrollWidth") <= 1400
    shown = "[...document.querySelectorAll('#grid tbody tr')].filter(r => !r.hidden)"
    assert browser.evaluate(f"{shown}.length") == 100
    pager = "document.querySelector('[data-pager-for=grid]')"
    assert "page 1 of 10" in browser.evaluate(f"{pager}.textContent")
    browser.evaluate(f"{pager}.querySelectorAll('button')[1].click()")  # next
    assert "page 2 of 10" in browser.evaluate(f"{pager}.textContent")
    assert browser.evaluate(f"{shown}[0].cells[0].textContent") == "org/model-0100"
    # A filter searches every row, not the page shown.
    browser.evaluate(
        "var i = document.querySelector('input[data-filter-for=grid]'); i.value = 'model-0777';"
        "i.dispatchEvent(new Event('input'))"
    )
    assert browser.evaluate(f"{shown}.map(r => r.cells[0].textContent)") == ["org/model-0777"]
    # The header stays at the top of the grid's box while its rows scroll.
    browser.evaluate(
        "i.value = ''; i.dispatchEvent(new Event('input'));"
        "document.querySelector('.scroll').scrollTop = 1500"
    )
    top = browser.evaluate(
        "document.querySelector('#grid thead th').getBoundingClientRect().top"
        " - document.querySelector('.scroll').getBoundingClientRect().top"
    )
    assert abs(top) < 2
