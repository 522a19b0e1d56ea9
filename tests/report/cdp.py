"""A headless Debian chromium driven over the DevTools protocol (websocket-client).

The browser runs in its own process group with its own profile dir; ``close()`` kills the
group. Console errors, uncaught exceptions and browser log errors (failed loads, CSP
violations) of each navigation are collected, so a test sees what a user's console would.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import websocket

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--no-first-run",
    "--no-default-browser-check",
    "--remote-debugging-port=0",
    "--remote-allow-origins=*",
    "--window-size=1400,1000",
)


@dataclass
class PageLoad:
    url: str
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)  # every URL the page asked for


class Browser:
    def __init__(self, profile: Path, log: Path) -> None:
        self._profile = profile
        self._log = log.open("wb")
        self.proc = subprocess.Popen(
            [str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        port = self._wait_port(profile / "DevToolsActivePort")
        targets = json.load(
            urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10)
        )
        page = next(t for t in targets if t["type"] == "page")
        self.ws = websocket.create_connection(
            page["webSocketDebuggerUrl"], timeout=30, suppress_origin=True
        )
        self._next_id = 0
        self._events: list[dict[str, Any]] = []
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")

    def _wait_port(self, port_file: Path, timeout: float = 60) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"chromium exited with {self.proc.returncode}")
            try:
                return int(port_file.read_text().split()[0])
            except (OSError, ValueError, IndexError):
                time.sleep(0.1)
        raise TimeoutError("chromium did not open its DevTools port")

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        ident = self._next_id
        self.ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == ident:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self._events.append(msg)

    def _pump(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        self.ws.settimeout(0.1)
        try:
            while time.monotonic() < deadline:
                try:
                    msg = json.loads(self.ws.recv())
                except websocket.WebSocketTimeoutException:
                    continue
                if "method" in msg:
                    self._events.append(msg)
        finally:
            self.ws.settimeout(30)

    def load(self, url: str, settle: float = 0.3) -> PageLoad:
        self._events.clear()
        self.call("Page.navigate", url=url)
        deadline = time.monotonic() + 30
        while not any(e["method"] == "Page.loadEventFired" for e in self._events):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url} did not finish loading")
            self._pump(0.1)
        self._pump(settle)  # late errors: deferred scripts, resource failures
        return PageLoad(
            url,
            [_error_text(e) for e in self._events if _is_error(e)],
            [
                e["params"]["request"]["url"]
                for e in self._events
                if e["method"] == "Network.requestWillBeSent"
            ],
        )

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"evaluate failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, full_page: bool = False) -> bytes:
        if not full_page:
            return base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"])
        width = self.evaluate("document.documentElement.clientWidth")
        height = min(self.evaluate("document.documentElement.scrollHeight"), 16000)
        clip = {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}
        shot = self.call(
            "Page.captureScreenshot", format="png", captureBeyondViewport=True, clip=clip
        )
        return base64.b64decode(shot["data"])

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.ws.close()
        # The whole group: the browser's zygote, renderer and utility processes too.
        _killpg(self.proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        _killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)
        self._log.close()
        _remove_singleton_folder(self._profile)


def _remove_singleton_folder(profile: Path) -> None:
    """Chromium keeps its singleton socket in a folder of the system temp dir, linked from
    the profile, and leaves it behind when killed; a test run must not litter /tmp."""
    with contextlib.suppress(OSError):
        folder = (profile / "SingletonSocket").readlink().parent
        if folder.name.startswith("org.chromium.Chromium."):
            shutil.rmtree(folder)


def _killpg(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)


def _is_error(event: dict[str, Any]) -> bool:
    method, params = event["method"], event.get("params", {})
    if method == "Runtime.exceptionThrown":
        return True
    if method == "Runtime.consoleAPICalled":
        return params.get("type") in ("error", "assert")
    if method == "Log.entryAdded":
        return params.get("entry", {}).get("level") == "error"
    return False


def _error_text(event: dict[str, Any]) -> str:
    return json.dumps(event.get("params", {}))[:500]
