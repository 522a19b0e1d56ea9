"""ensure_models_downloaded with the real huggingface_hub client against a real local hub."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import psutil
import pytest

from kerneltracer.config import DownloadSettings
from kerneltracer.core.jobspec import ModelRef, slugify
from kerneltracer.core.snapshot import hub_cache_dir
from kerneltracer.orchestrator.download import (
    DownloadProgress,
    ModelDownload,
    ensure_models_downloaded,
)
from tests.hub.conftest import HubRepos
from tests.hub.hubserver import Fault, Repo, make_repo


def hub_ref(repo_id: str, revision: str | None = None) -> ModelRef:
    return ModelRef(display=repo_id, slug=slugify(repo_id), id=repo_id, revision=revision)


def path_ref(path: Path) -> ModelRef:
    return ModelRef(display=path.name, slug=path.name, path=str(path), local_dir=str(path))


def ensure(
    refs: list[ModelRef], env: dict[str, str], log_dir: Path | None = None, **settings: object
) -> dict[str, ModelDownload]:
    return ensure_models_downloaded(
        refs, DownloadSettings.model_validate(settings), env=env, log_dir=log_dir
    )


def snapshot(env: dict[str, str], repo: Repo) -> Path:
    return hub_cache_dir(env) / f"models--{repo.repo_id.replace('/', '--')}/snapshots/{repo.commit}"


def test_four_models_download_concurrently_with_the_right_files(
    repos: HubRepos, hub_env: dict[str, str]
) -> None:
    for repo in repos.good:  # each file answer takes a while: downloads must overlap
        repos.hub.fault(repo.repo_id, Fault("delay", seconds=0.7, only="resolve"))
    refs = [hub_ref(r.repo_id) for r in repos.good] + [path_ref(repos.dirs["tiny-bert"])]
    results = ensure(refs, hub_env, max_workers=4)

    assert {s: r.outcome.value for s, r in results.items()} == {ref.slug: "ok" for ref in refs}, [
        r.reason for r in results.values()
    ]
    assert repos.hub.peak_repos_in_flight >= 3
    for repo in repos.good:
        res = results[slugify(repo.repo_id)]
        assert res.fetched and res.resolved_revision == repo.commit
        assert res.local_dir == str(snapshot(hub_env, repo))
    llama = snapshot(hub_env, repos.llama)
    assert sorted(p.name for p in llama.iterdir()) == [
        "config.json",
        "generation_config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
    ]  # no duplicate .bin / .onnx / .gguf weights
    data = (llama / "model.safetensors").read_bytes()
    assert hashlib.sha256(data).hexdigest() == repos.llama.files["model.safetensors"].sha256
    # A repo without safetensors gets its .bin weights instead.
    assert (snapshot(hub_env, repos.gpt2_bin) / "pytorch_model.bin").is_file()
    local = results["tiny-bert"]
    assert not local.fetched and local.local_dir == str(repos.dirs["tiny-bert"])
    assert not any(r.path.startswith("/tiny-bert") for r in repos.hub.requests)


def test_second_run_asks_nothing_and_offline_works(
    repos: HubRepos, hub_env: dict[str, str]
) -> None:
    refs = [hub_ref(r.repo_id) for r in repos.good]
    first = ensure(refs, hub_env)
    assert all(r.ok for r in first.values()), [r.reason for r in first.values()]
    repos.hub.clear_log()

    again = ensure(refs, hub_env)
    assert repos.hub.requests == []
    assert all(r.ok and not r.fetched for r in again.values())
    assert {s: r.resolved_revision for s, r in again.items()} == {
        s: r.resolved_revision for s, r in first.items()
    }

    repos.hub.stop()  # offline means offline: not even a refused connection
    offline = {**hub_env, "HF_HUB_OFFLINE": "1"}
    res = ensure([*refs, hub_ref("org/never-downloaded")], offline)
    assert all(res[ref.slug].ok for ref in refs)
    missing = res["org--never-downloaded"]
    assert missing.outcome.value == "not_found"
    assert missing.reason == (
        "org/never-downloaded@main is not in the local cache and HF_HUB_OFFLINE is set"
    )


def test_deleted_blob_and_snapshot_file_are_incomplete_then_repaired(
    repos: HubRepos, hub_env: dict[str, str]
) -> None:
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import IncompleteSnapshotError

    settings = DownloadSettings()
    refs = [hub_ref(repos.llama.repo_id), hub_ref(repos.gpt2.repo_id)]
    assert all(r.ok for r in ensure(refs, hub_env).values())
    weights = snapshot(hub_env, repos.llama) / "model.safetensors"
    weights.resolve().unlink()  # the blob: the snapshot symlink now dangles
    (snapshot(hub_env, repos.gpt2) / "tokenizer.json").unlink()

    offline = ensure(refs, {**hub_env, "HF_HUB_OFFLINE": "1"})
    assert offline["org--tiny-llama"].outcome.value == "incomplete"
    assert "model.safetensors is missing" in (offline["org--tiny-llama"].reason or "")
    assert offline["org--tiny-gpt2"].outcome.value == "incomplete"
    assert "tokenizer.json is missing" in (offline["org--tiny-gpt2"].reason or "")
    # huggingface_hub itself agrees: offline, both snapshots are incomplete.
    for ref in refs:
        with pytest.raises(IncompleteSnapshotError):
            snapshot_download(
                ref.id or "",
                cache_dir=hub_cache_dir(hub_env),
                local_files_only=True,
                allow_patterns=settings.allow_patterns,
                ignore_patterns=settings.ignore_patterns,
            )

    repos.hub.clear_log()
    repaired = ensure(refs, hub_env)
    assert all(r.ok and r.fetched for r in repaired.values()), [r.reason for r in repaired.values()]
    assert weights.read_bytes() == repos.llama.files["model.safetensors"].data
    assert (snapshot(hub_env, repos.gpt2) / "tokenizer.json").read_bytes() == (
        repos.gpt2.files["tokenizer.json"].data
    )
    files = [r.path.rsplit("/", 1)[-1] for r in repos.hub.requests if "/resolve/" in r.path]
    # Only what was missing is asked for; the deleted blob is fetched again, while the
    # snapshot file whose blob survived is relinked after a HEAD.
    assert sorted(files) == ["model.safetensors", "model.safetensors", "tokenizer.json"]


def test_each_failure_gets_its_own_result_within_the_timeout(
    repos: HubRepos, hub_env: dict[str, str], tmp_path: Path
) -> None:
    hub = repos.hub
    hub.fault(repos.bert.repo_id, Fault("500"))
    hub.fault(repos.gpt2.repo_id, Fault("hang"))
    hub.fault(repos.gpt2_bin.repo_id, Fault("gated"))
    refs = [
        hub_ref("org/does-not-exist"),
        hub_ref(repos.llama.repo_id, revision="no-such-branch"),
        hub_ref(repos.bert.repo_id),
        hub_ref(repos.gpt2.repo_id),
        hub_ref(repos.gpt2_bin.repo_id),
        hub_ref(repos.llama.repo_id, revision=repos.llama.commit).model_copy(
            update={"slug": "llama-pinned"}
        ),
    ]
    t0 = time.monotonic()
    # 6 children start at once on 2 cores (~1 s of imports each): leave them room.
    results = ensure(refs, hub_env, tmp_path / "logs", max_workers=6, timeout_s=8)
    took = time.monotonic() - t0

    outcome = {s: (r.outcome.value, r.reason or "") for s, r in results.items()}
    assert outcome["org--does-not-exist"][0] == "not_found"
    assert "org/does-not-exist not found" in outcome["org--does-not-exist"][1]
    assert outcome["org--tiny-llama"] == (
        "revision_not_found",
        "revision 'no-such-branch' not found in org/tiny-llama",
    )
    assert outcome["acme--tiny-bert"][0] == "error" and "500" in outcome["acme--tiny-bert"][1]
    assert outcome["org--tiny-gpt2"] == (
        "timeout",
        "download of org/tiny-gpt2 gave no result within 8 s and was stopped (download.timeout_s)",
    )
    assert outcome["org--tiny-gpt2-bin"][0] == "gated"
    assert outcome["llama-pinned"][0] == "ok"  # the run goes on for the others
    assert results["llama-pinned"].resolved_revision == repos.llama.commit
    assert took < 8 + 15
    # The killed download left nothing running.
    leftovers = [
        p
        for p in psutil.process_iter(["cmdline"])
        if str(tmp_path / "logs") in " ".join(p.info["cmdline"] or [])
    ]
    assert leftovers == []


def test_truncated_body_is_downloaded_again(repos: HubRepos, hub_env: dict[str, str]) -> None:
    repos.hub.fault(repos.llama.repo_id, Fault("truncate", times=1))
    res = ensure([hub_ref(repos.llama.repo_id)], hub_env)["org--tiny-llama"]
    assert res.ok, res.reason
    gets = [r.path.rsplit("/", 1)[-1] for r in repos.hub.requests if r.method == "GET"]
    cut = next(name for name in gets if gets.count(name) == 2)  # the one asked twice
    assert (snapshot(hub_env, repos.llama) / cut).read_bytes() == repos.llama.files[cut].data


def test_local_path_models_get_the_same_check(tmp_path: Path, tiny_dirs: dict[str, Path]) -> None:
    import shutil

    ok = tiny_dirs["tiny-gpt2"]
    no_weights = tmp_path / "no-weights"
    shutil.copytree(ok, no_weights)
    (no_weights / "model.safetensors").unlink()
    cut = tmp_path / "truncated"
    shutil.copytree(ok, cut)
    with open(cut / "model.safetensors", "r+b") as fh:
        fh.truncate(os.path.getsize(ok / "model.safetensors") - 100)
    no_config = tmp_path / "no-config"
    shutil.copytree(ok, no_config)
    (no_config / "config.json").unlink()

    res = ensure(
        [path_ref(p) for p in (ok, no_weights, cut, no_config, tmp_path / "gone")],
        {"HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1"},
    )
    assert res["tiny-gpt2"].ok and res["tiny-gpt2"].local_dir == str(ok)
    assert res["no-weights"].outcome.value == "incomplete"
    assert res["no-weights"].reason == (
        f"local model {no_weights} is incomplete: no weights (*.safetensors or pytorch_model*.bin)"
    )
    assert "model.safetensors has" in (res["truncated"].reason or "")
    assert "config.json is missing" in (res["no-config"].reason or "")
    assert (res["gone"].outcome.value, res["gone"].reason) == (
        "not_found",
        f"local model dir {tmp_path / 'gone'} does not exist",
    )


def test_branches_follow_the_hub_only_on_refresh_and_pins_stay(
    repos: HubRepos, hub_env: dict[str, str]
) -> None:
    old = repos.gpt2
    assert ensure([hub_ref(old.repo_id)], hub_env)["org--tiny-gpt2"].resolved_revision == old.commit
    new = repos.hub.add(make_repo(old.repo_id, repos.dirs["tiny-gpt2"], {"notes.txt": b"v2"}))
    assert new.commit != old.commit

    cached = ensure([hub_ref(old.repo_id)], hub_env)["org--tiny-gpt2"]
    assert cached.resolved_revision == old.commit and not cached.fetched
    moved = ensure_models_downloaded([hub_ref(old.repo_id)], env=hub_env, refresh=True)
    assert moved["org--tiny-gpt2"].resolved_revision == new.commit
    assert (snapshot(hub_env, new) / "notes.txt").read_bytes() == b"v2"
    # A pinned commit is immutable: served from the cache, offline too.
    pinned = ensure([hub_ref(old.repo_id, old.commit)], {**hub_env, "HF_HUB_OFFLINE": "1"})
    assert pinned["org--tiny-gpt2"].ok and pinned["org--tiny-gpt2"].local_dir == str(
        snapshot(hub_env, old)
    )


class _Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, object]] = []

    def download_started(self, model: ModelRef) -> None:
        self.events.append(("started", model.slug, None))

    def download_progress(self, model: ModelRef, progress: DownloadProgress) -> None:
        self.events.append(("progress", model.slug, progress))

    def download_finished(self, model: ModelRef, result: ModelDownload) -> None:
        self.events.append(("finished", model.slug, result.outcome.value))


def test_progress_reports_bytes_and_files_per_model(
    repos: HubRepos, hub_env: dict[str, str]
) -> None:
    repos.hub.fault(repos.llama.repo_id, Fault("delay", seconds=0.5, only="resolve"))
    seen = _Recorder()
    ensure_models_downloaded(
        [hub_ref(repos.llama.repo_id)], env=hub_env, observer=seen, progress_s=0.1
    )
    kinds = [e[0] for e in seen.events]
    assert kinds[0] == "started" and kinds[-1] == "finished" and "progress" in kinds
    steps = [e[2] for e in seen.events if isinstance(e[2], DownloadProgress)]
    total = sum(
        len(f.data) for p, f in repos.llama.files.items() if p.endswith((".json", ".safetensors"))
    )
    assert {(s.total_bytes, s.total_files) for s in steps} == {(total, 5)}
    assert [s.done_files for s in steps] == sorted(s.done_files for s in steps)


def test_fake_weights_fetch_config_and_tokenizer_but_no_weight_file(
    repos: HubRepos, hub_env: dict[str, str]
) -> None:
    # tiny-llama's repo also carries .bin, .onnx and .gguf duplicates; gpt2-bin only a .bin.
    refs = [
        ModelRef(display=r.repo_id, slug=slugify(r.repo_id), id=r.repo_id, weights="fake")
        for r in (repos.llama, repos.gpt2_bin)
    ]
    results = ensure(refs, hub_env)
    assert all(r.ok and r.weights == "fake" for r in results.values()), results
    for repo in (repos.llama, repos.gpt2_bin):
        folder = snapshot(hub_env, repo)
        got = sorted(p.name for p in folder.iterdir())
        assert "config.json" in got and "tokenizer.json" in got, got
        assert not [n for n in got if n.endswith((".safetensors", ".bin", ".onnx", ".gguf"))]
        asked = [r.path for r in repos.hub.requests_for(repo.repo_id) if "/resolve/" in r.path]
        assert asked and not [p for p in asked if p.endswith((".safetensors", ".bin", ".gguf"))]
    # Complete as it is: a second call asks the hub nothing.
    repos.hub.clear_log()
    again = ensure(refs, hub_env)
    assert all(r.ok and not r.fetched for r in again.values())
    assert repos.hub.requests == []
