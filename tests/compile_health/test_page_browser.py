"""The compile-health page in headless Debian chromium: every compile id of every log,
with all its details open, fits the window (no horizontal scroll), with the long option
strings, frames and reasons real fleets have."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kerneltracer.analysis.compile_health.export import write_fleet
from kerneltracer.analysis.compile_health.fleet import logs_health
from tests.conftest import require
from tests.report.cdp import CHROMIUM, Browser

WIDTHS = (1400, 1024)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    require(CHROMIUM.exists(), f"{CHROMIUM} (scripts/install-chromium.sh installs it, as root)")
    tmp = tmp_path_factory.mktemp("chromium")
    b = Browser(tmp / "profile", tmp / "chromium.log")
    try:
        yield b
    finally:
        b.close()


@pytest.fixture(scope="module")
def page(testdata_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = testdata_dir / "tlparse"
    logs = [*sorted(p for p in root.iterdir() if p.is_file()), root / "multi_rank_logs"]
    fleet = logs_health(logs)
    # What a run's jobs carry: every tracer option, in one string without spaces.
    fleet.jobs[0].options = {
        f"option_{i}": "/a/very/long/path/without/any/space/" + "x" * 60 for i in range(12)
    }
    out = tmp_path_factory.mktemp("page")
    write_fleet(fleet, out)
    return out / "compile_health.html"


@pytest.mark.parametrize("width", WIDTHS)
def test_page_per_compile_id_has_no_horizontal_scroll(
    browser: Browser, page: Path, width: int
) -> None:
    browser.call(
        "Emulation.setDeviceMetricsOverride",
        width=width,
        height=900,
        deviceScaleFactor=1,
        mobile=False,
    )
    loaded = browser.load(page.as_uri())
    assert loaded.errors == []
    browser.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    scroll = browser.evaluate("document.documentElement.scrollWidth")
    inner = browser.evaluate("window.innerWidth")
    assert scroll <= inner, f"{scroll}px of content in a {inner}px window"
    text = browser.evaluate("document.body.innerText")
    assert "Per compile id" in text
    assert "fn (resumed at line 9551)" in text  # comp_metrics.log's resume function
    assert "[1/0_1]" in text and "ran eagerly" in text  # comp_failure.log's failed frame
