"""A local Hugging Face hub for tests: real HTTP on 127.0.0.1 for the real ``huggingface_hub``.

It serves directories as model repos at one commit each, answering what
``snapshot_download`` asks of a hub (read from huggingface_hub 2.4's source and checked
against this server's request log):

- ``GET /api/models/{repo}/revision/{rev}``: repo info with the commit ``sha``;
- ``GET /api/models/{repo}/tree/{rev}?recursive=true``: file entries (type, oid, size, path,
  and ``lfs`` for weights);
- ``HEAD``/``GET /{repo}/resolve/{rev}/{path}``: ``X-Repo-Commit``, ``ETag`` (and
  ``X-Linked-Etag``/``X-Linked-Size`` for LFS files), ``Content-Length``, ``Range`` support;
- 404s with ``X-Error-Code`` (RepoNotFound / RevisionNotFound / EntryNotFound).

Every response has a Content-Length (HEAD and errors too) and the server never sends xet
headers. Faults are switched per repo: ``404``, ``500``, ``gated``, ``truncate`` (half the
body, then the connection closes), ``hang`` (read the request, never answer) and ``delay``.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

LFS_SUFFIXES = (".safetensors", ".bin", ".onnx", ".gguf", ".pt")
_API = re.compile(r"^/api/models/(?P<repo>[^/]+/[^/]+)/(?P<kind>revision|tree)/(?P<rev>[^/?]+)$")
_RESOLVE = re.compile(r"^/(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<path>.+)$")


@dataclass(frozen=True)
class RepoFile:
    path: str
    data: bytes
    blob_id: str  # git blob sha1, the ETag of a regular file
    sha256: str | None  # set for LFS files: their ETag

    @property
    def etag(self) -> str:
        return self.sha256 or self.blob_id


@dataclass
class Repo:
    repo_id: str
    commit: str
    files: dict[str, RepoFile]
    tags: dict[str, str] = field(default_factory=dict)  # branch/tag name → commit


@dataclass
class Fault:
    kind: str  # "404", "500", "gated", "truncate", "hang", "delay"
    seconds: float = 0.0  # for "delay"
    times: int | None = None  # how many matching requests it affects; None: all
    only: str | None = None  # "api" or "resolve": restrict to one kind of request


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: dict[str, str]


def make_repo(repo_id: str, src: Path, extra: Mapping[str, bytes] | None = None) -> Repo:
    """A repo holding every file under ``src`` (plus ``extra``), at a commit named by content."""
    contents = {
        p.relative_to(src).as_posix(): p.read_bytes()
        for p in sorted(src.rglob("*"))
        if p.is_file() and not p.name.startswith(".")
    }
    contents.update(extra or {})
    files = {}
    for path, data in contents.items():
        blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        lfs = hashlib.sha256(data).hexdigest() if path.endswith(LFS_SUFFIXES) else None
        files[path] = RepoFile(path, data, blob, lfs)
    commit = hashlib.sha1(
        json.dumps({repo_id: {p: f.blob_id for p, f in files.items()}}, sort_keys=True).encode()
    ).hexdigest()
    return Repo(repo_id, commit, files, {"main": commit})


class LocalHub:
    """The server, its repos, its fault switches and the log of requests it got."""

    def __init__(self) -> None:
        self.repos: dict[str, Repo] = {}
        self.faults: dict[str, Fault] = {}
        self.requests: list[Request] = []
        self.in_flight: dict[str, int] = {}
        self.peak_repos_in_flight = 0  # most repos served at the same moment
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def add(self, repo: Repo) -> Repo:
        self.repos[repo.repo_id] = repo
        return repo

    def fault(self, repo_id: str, fault: Fault | None) -> None:
        with self._lock:
            if fault is None:
                self.faults.pop(repo_id, None)
            else:
                self.faults[repo_id] = fault

    def requests_for(self, repo_id: str) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if f"/{repo_id}/" in r.path]

    def clear_log(self) -> None:
        with self._lock:
            self.requests.clear()

    def start(self) -> LocalHub:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._closing.set()  # hanging handlers return
        self._server.shutdown()
        self._server.server_close()

    def _take_fault(self, repo_id: str, kind: str, method: str) -> Fault | None:
        with self._lock:
            fault = self.faults.get(repo_id)
            if fault is None or (fault.only is not None and fault.only != kind):
                return None
            if fault.kind == "truncate" and (kind != "resolve" or method != "GET"):
                return None
            if fault.times is not None:
                fault.times -= 1
                if fault.times <= 0:
                    del self.faults[repo_id]
            return fault


@contextmanager
def running_hub() -> Iterator[LocalHub]:
    hub = LocalHub().start()
    try:
        yield hub
    finally:
        hub.stop()


def _handler_for(hub: LocalHub) -> type[BaseHTTPRequestHandler]:
    class Handler(_HubHandler):
        pass

    Handler.hub = hub
    return Handler


class _HubHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    hub: LocalHub

    def log_message(self, format: str, *args: object) -> None:
        pass  # the hub keeps its own request log

    def do_GET(self) -> None:
        self._dispatch(head=False)

    def do_HEAD(self) -> None:
        self._dispatch(head=True)

    def _dispatch(self, head: bool) -> None:
        url = urlsplit(self.path)
        path = unquote(url.path)
        with self.hub._lock:
            self.hub.requests.append(Request(self.command, path, dict(self.headers.items())))
        if path == "/api/agent-harnesses":  # the client's agent registry: an empty one
            body = json.dumps({"standardEnvVars": [], "harnesses": {}}).encode()
            return self._send(200, body, {"Content-Type": "application/json"}, head)
        api, resolve = _API.match(path), _RESOLVE.match(path)
        match = api or resolve
        if match is None:
            return self._error(404, "RepoNotFound", head)
        repo_id = match["repo"]
        with self.hub._lock:
            self.hub.in_flight[repo_id] = self.hub.in_flight.get(repo_id, 0) + 1
            busy = sum(1 for n in self.hub.in_flight.values() if n > 0)
            self.hub.peak_repos_in_flight = max(self.hub.peak_repos_in_flight, busy)
        try:
            self._serve(match, repo_id, api, resolve, head)
        finally:
            with self.hub._lock:
                self.hub.in_flight[repo_id] -= 1
        return None

    def _serve(
        self,
        match: re.Match[str],
        repo_id: str,
        api: re.Match[str] | None,
        resolve: re.Match[str] | None,
        head: bool,
    ) -> None:
        fault = self.hub._take_fault(repo_id, "api" if api else "resolve", self.command)
        if fault is not None and self._apply(fault, head):
            return None
        repo = self.hub.repos.get(repo_id)
        if repo is None:
            return self._error(404, "RepoNotFound", head)
        rev = unquote(match["rev"])
        commit = repo.tags.get(rev, rev if rev == repo.commit else None)
        if commit is None:
            return self._error(404, "RevisionNotFound", head, repo)
        if api is not None:
            return self._api(repo, api["kind"], head)
        return self._resolve(repo, resolve["path"] if resolve else "", head, fault)

    def _apply(self, fault: Fault, head: bool) -> bool:
        """Act out a fault; True if the request is answered (or abandoned) by it."""
        if fault.kind == "hang":
            self.hub._closing.wait()
            self.close_connection = True
            return True
        if fault.kind == "delay":
            self.hub._closing.wait(fault.seconds)
            return False
        if fault.kind in ("404", "500", "gated"):
            code, error = {"404": (404, "RepoNotFound"), "500": (500, None)}.get(
                fault.kind, (403, "GatedRepo")
            )
            self._error(code, error, head)
            return True
        return False  # "truncate" acts while sending a file body

    def _api(self, repo: Repo, kind: str, head: bool) -> None:
        if kind == "revision":
            body: object = {
                "id": repo.repo_id,
                "modelId": repo.repo_id,
                "sha": repo.commit,
                "private": False,
                "siblings": [{"rfilename": p} for p in repo.files],
            }
        else:
            body = _tree(repo)
        self._send(200, json.dumps(body).encode(), {"Content-Type": "application/json"}, head)

    def _resolve(self, repo: Repo, path: str, head: bool, fault: Fault | None) -> None:
        file = repo.files.get(path)
        if file is None:
            return self._error(404, "EntryNotFound", head, repo)
        headers = {
            "X-Repo-Commit": repo.commit,
            "ETag": f'"{file.etag}"',
            "Accept-Ranges": "bytes",
            "Content-Type": "application/octet-stream",
        }
        if file.sha256 is not None:
            headers["X-Linked-Etag"] = f'"{file.sha256}"'
            headers["X-Linked-Size"] = str(len(file.data))
        data, status = file.data, 200
        ranged = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
        if ranged is not None and not head:
            start = int(ranged[1])
            end = int(ranged[2]) if ranged[2] else len(data) - 1
            headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
            data, status = data[start : end + 1], 206
        if fault is not None and fault.kind == "truncate" and not head:
            self._send(status, data, headers, head=False, cut=len(data) // 2)
            return None
        self._send(status, data, headers, head)
        return None

    def _error(self, code: int, error: str | None, head: bool, repo: Repo | None = None) -> None:
        headers = {"Content-Type": "application/json"}
        if error is not None:
            headers["X-Error-Code"] = error
            headers["X-Error-Message"] = f"{error} (local test hub)"
        if repo is not None and error == "EntryNotFound":
            headers["X-Repo-Commit"] = repo.commit
        body = json.dumps({"error": error or "Internal Error"}).encode()
        self._send(code, body, headers, head)

    def _send(
        self,
        status: int,
        body: bytes,
        headers: Mapping[str, str],
        head: bool,
        cut: int | None = None,
    ) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if head:
            return
        if cut is not None:
            self.wfile.write(body[:cut])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(body)


def _tree(repo: Repo) -> list[dict[str, object]]:
    entries: list[dict[str, object]] = []
    folders = sorted({p.rsplit("/", 1)[0] for p in repo.files if "/" in p})
    for folder in folders:
        entries.append({"type": "directory", "oid": "0" * 40, "size": 0, "path": folder})
    for file in repo.files.values():
        entry: dict[str, object] = {
            "type": "file",
            "oid": file.blob_id,
            "size": len(file.data),
            "path": file.path,
        }
        if file.sha256 is not None:
            entry["lfs"] = {"oid": file.sha256, "size": len(file.data), "pointerSize": 134}
        entries.append(entry)
    return entries
