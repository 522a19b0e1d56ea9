"""The local hub answers like the real one where huggingface_hub looks."""

from __future__ import annotations

import http.client
import json

from tests.hub.conftest import HubRepos


def _request(
    repos: HubRepos, method: str, path: str, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    host, port = repos.hub.endpoint.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request(method, path, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read()
    finally:
        conn.close()


def test_resolve_head_and_range(repos: HubRepos) -> None:
    repo = repos.llama
    weights = repo.files["model.safetensors"]
    path = f"/{repo.repo_id}/resolve/main/model.safetensors"
    status, headers, body = _request(repos, "HEAD", path)
    assert status == 200 and body == b""
    assert headers["X-Repo-Commit"] == repo.commit
    assert headers["Content-Length"] == str(len(weights.data))
    assert headers["X-Linked-Etag"] == f'"{weights.sha256}"'
    assert not any(h.lower().startswith("x-xet") for h in headers)
    status, headers, body = _request(repos, "GET", path, {"Range": "bytes=100-"})
    assert status == 206 and body == weights.data[100:]
    assert headers["Content-Range"] == f"bytes 100-{len(weights.data) - 1}/{len(weights.data)}"


def test_api_and_errors(repos: HubRepos) -> None:
    repo = repos.llama
    status, _, body = _request(repos, "GET", f"/api/models/{repo.repo_id}/revision/main")
    assert status == 200 and json.loads(body)["sha"] == repo.commit
    status, _, body = _request(
        repos, "GET", f"/api/models/{repo.repo_id}/tree/{repo.commit}?recursive=true"
    )
    entries = {e["path"]: e for e in json.loads(body) if e["type"] == "file"}
    assert entries["model.safetensors"]["lfs"]["oid"] == repo.files["model.safetensors"].sha256
    assert entries["config.json"]["oid"] == repo.files["config.json"].blob_id
    for path, code in [
        ("/api/models/org/nope/revision/main", "RepoNotFound"),
        (f"/api/models/{repo.repo_id}/revision/v9", "RevisionNotFound"),
        (f"/{repo.repo_id}/resolve/main/nope.json", "EntryNotFound"),
    ]:
        status, headers, body = _request(repos, "GET", path)
        assert (status, headers["X-Error-Code"]) == (404, code)
        assert int(headers["Content-Length"]) == len(body) > 0
        status, headers, body = _request(repos, "HEAD", path)
        assert (status, headers["X-Error-Code"], body) == (404, code, b"")
        assert int(headers["Content-Length"]) > 0
