"""Is a model whole on disk? Checks that read the disk only, never the network.

A hub model is whole when every file of its cached repo tree (``trees/<commit>.json``,
written by huggingface_hub ≥ 1.22 when it lists the repo) that the download patterns select is in
the snapshot with the tree's size; a dangling symlink (deleted blob) counts as missing. Both
a hub snapshot and a local ``path:`` model must also hold a readable ``config.json`` and
weights whose safetensors headers agree with their file sizes.
"""

from __future__ import annotations

import fnmatch
import os
import re
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

import orjson

from kerneltracer.errors import InputFileError
from kerneltracer.inputguard import SMALL_FILE, check_input_file, read_input

_COMMIT = re.compile(r"^[0-9a-f]{40}$")
# Weights of a repo that has no safetensors at all: fetched instead, never beside them.
BIN_WEIGHT_PATTERNS = ("pytorch_model*.bin", "model*.bin")
_SAFETENSORS_HEADER_MAX = 100 * 1024 * 1024
# Every weight format a repo may ship. A model traced with fake weights fetches none: it is
# built from its config, and a 70B checkpoint is 140 GB the trace never reads.
WEIGHT_PATTERNS = (
    "*.safetensors",
    "*.bin",
    "*.pt",
    "*.pth",
    "*.ckpt",
    "*.gguf",
    "*.onnx",
    "*.onnx_data",
    "*.msgpack",
    "*.h5",
    "*.npz",
    "*.ot",
    "*.tflite",
)


@dataclass(frozen=True)
class FilePatterns:
    """Which repo files a model needs on disk: the download's patterns, and whether weights
    are among them (they are not for ``weights: fake``)."""

    allow: tuple[str, ...] | None
    ignore: tuple[str, ...] | None
    weights: bool = True

    @classmethod
    def of(
        cls, allow: Sequence[str] | None, ignore: Sequence[str] | None, weights: bool = True
    ) -> FilePatterns:
        if weights:
            return cls(tuple(allow) if allow else None, tuple(ignore) if ignore else None)
        return cls(tuple(allow) if allow else None, (*(ignore or ()), *WEIGHT_PATTERNS), False)


class SnapshotState(StrEnum):
    COMPLETE = "complete"
    INCOMPLETE = "incomplete"
    ABSENT = "absent"  # nothing cached for this revision
    UNVERIFIED = "unverified"  # files cached, but no tree listing to compare them with


@dataclass(frozen=True)
class SnapshotCheck:
    state: SnapshotState
    commit: str | None = None
    folder: str | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def reason(self) -> str:
        if not self.problems:
            return self.state.value
        more = f" (+{len(self.problems) - 3} more)" if len(self.problems) > 3 else ""
        return "; ".join(self.problems[:3]) + more


# huggingface_hub's tree cache format (its _tree_cache.TREE_CACHE_FORMAT_VERSION).
TREE_FORMAT_VERSION = 1


def hub_cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """The hub cache the way huggingface_hub finds it, read from ``env`` now, not at import."""
    env = os.environ if env is None else env
    explicit = env.get("HF_HUB_CACHE") or env.get("HUGGINGFACE_HUB_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    xdg = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    home = env.get("HF_HOME") or os.path.join(xdg, "huggingface")
    return Path(home).expanduser() / "hub"


def is_offline(env: Mapping[str, str] | None = None) -> bool:
    env = os.environ if env is None else env
    value = env.get("HF_HUB_OFFLINE") or env.get("TRANSFORMERS_OFFLINE") or ""
    return value.strip().upper() in ("1", "ON", "YES", "TRUE")


def repo_storage(cache_dir: Path, repo_id: str) -> Path:
    return cache_dir / ("models--" + repo_id.replace("/", "--"))


def cached_commit(cache_dir: Path, repo_id: str, revision: str | None) -> str | None:
    """The commit a revision points to in the cache (a sha is its own commit)."""
    revision = revision or "main"
    if _COMMIT.match(revision):
        return revision
    try:
        text = (repo_storage(cache_dir, repo_id) / "refs" / revision).read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text if _COMMIT.match(text) else None


def cached_tree(cache_dir: Path, repo_id: str, commit: str) -> dict[str, int] | None:
    """path → size from the tree listing huggingface_hub cached for ``commit``.

    The layout is huggingface_hub's (≥ 1.22, which pyproject requires); read here rather than
    through its ``get_cached_repo_tree`` to keep the hub import out of the orchestrator's
    hot path. A format this code does not know is ignored, as the hub itself does.
    """
    path = repo_storage(cache_dir, repo_id) / "trees" / f"{commit}.json"
    try:
        data = orjson.loads(path.read_bytes())
        if data.get("format_version") != TREE_FORMAT_VERSION:
            return None
        return {p: int(info["size"]) for p, info in data["files"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def wanted_files(
    paths: Sequence[str], allow: Sequence[str] | None, ignore: Sequence[str] | None
) -> list[str]:
    """The repo files a download fetches: the patterns' pick, bin weights if no safetensors."""
    picked = _filter(paths, allow, ignore)
    if needs_bin_weights(paths, ignore):
        picked += [p for p in _filter(paths, BIN_WEIGHT_PATTERNS, ignore) if p not in picked]
    return picked


def needs_bin_weights(paths: Sequence[str], ignore: Sequence[str] | None) -> bool:
    """A repo without safetensors is loaded from its .bin weights, so those are fetched."""
    return not any(p.endswith(".safetensors") for p in paths) and bool(
        _filter(paths, BIN_WEIGHT_PATTERNS, ignore)
    )


def _filter(
    paths: Sequence[str], allow: Sequence[str] | None, ignore: Sequence[str] | None
) -> list[str]:
    # huggingface_hub's own rule, so this check and the download agree on what is wanted.
    from huggingface_hub.utils import filter_repo_objects

    return list(
        filter_repo_objects(
            paths,
            allow_patterns=list(allow) if allow else None,
            ignore_patterns=list(ignore) if ignore else None,
        )
    )


def check_hub_snapshot(
    cache_dir: Path, repo_id: str, revision: str | None, patterns: FilePatterns
) -> SnapshotCheck:
    commit = cached_commit(cache_dir, repo_id, revision)
    if commit is None:
        return SnapshotCheck(SnapshotState.ABSENT)
    folder = repo_storage(cache_dir, repo_id) / "snapshots" / commit
    if not folder.is_dir():
        return SnapshotCheck(SnapshotState.ABSENT, commit)
    tree = cached_tree(cache_dir, repo_id, commit)
    if tree is None:
        return SnapshotCheck(
            SnapshotState.UNVERIFIED, commit, str(folder), ["no cached tree listing"]
        )
    problems = []
    for rel in wanted_files(list(tree), patterns.allow, patterns.ignore):
        try:
            size = os.stat(folder / rel).st_size  # follows the symlink into blobs/
        except OSError:
            problems.append(f"{rel} is missing")
            continue
        if size != tree[rel]:
            problems.append(f"{rel} has {size} bytes, the repo has {tree[rel]}")
    problems += model_files_problems(folder, weights=patterns.weights)
    state = SnapshotState.INCOMPLETE if problems else SnapshotState.COMPLETE
    return SnapshotCheck(state, commit, str(folder), problems)


def check_local_dir(path: Path, weights: bool = True) -> SnapshotCheck:
    if not path.is_dir():
        return SnapshotCheck(SnapshotState.ABSENT, None, str(path), [f"{path} is not a directory"])
    problems = model_files_problems(path, weights=weights)
    state = SnapshotState.INCOMPLETE if problems else SnapshotState.COMPLETE
    return SnapshotCheck(state, None, str(path), problems)


def model_files_problems(folder: Path, weights: bool = True) -> list[str]:
    """What keeps a model dir from loading: config.json and (unless ``weights`` is False, for
    a model built from its config alone) weights present and readable."""
    problems = []
    config = folder / "config.json"
    try:
        orjson.loads(read_input(config, SMALL_FILE, what="model config", gzip=False))
    except InputFileError as exc:
        missing = not os.path.lexists(config)
        problems.append("config.json is missing" if missing else f"config.json: {exc}")
    except ValueError as exc:
        problems.append(f"config.json is unreadable ({type(exc).__name__})")
    if not weights:
        return problems
    try:
        names = sorted(os.listdir(folder))
    except OSError as exc:
        return [*problems, f"cannot list {folder}: {exc.strerror}"]
    weight_files, index_problem = _weight_files(folder, names)
    if index_problem is not None:
        problems.append(index_problem)
    elif not weight_files:
        problems.append("no weights (*.safetensors or pytorch_model*.bin)")
    for name in weight_files:
        why = _weights_problem(folder / name)
        if why is not None:
            problems.append(f"{name} {why}")
    return problems


def _weight_files(folder: Path, names: list[str]) -> tuple[list[str], str | None]:
    """The weight files a loader opens (every shard an index names), or why unknown."""
    index = next((n for n in names if n.endswith(".safetensors.index.json")), None)
    if index is None:
        index = next((n for n in names if n.endswith(".bin.index.json")), None)
    if index is not None:
        try:
            data = read_input(folder / index, SMALL_FILE, what="weight index", gzip=False)
            shards = orjson.loads(data)["weight_map"].values()
            return sorted({str(s) for s in shards}), None
        except (InputFileError, ValueError, KeyError, TypeError, AttributeError):
            return [], f"{index} is unreadable"
    safetensors = [n for n in names if n.endswith(".safetensors")]
    if safetensors:
        return safetensors, None
    bins = [n for n in names if any(fnmatch.fnmatch(n, p) for p in BIN_WEIGHT_PATTERNS)]
    return bins, None


def _weights_problem(path: Path) -> str | None:
    """None if the file is there and, for safetensors, its header fits its size."""
    try:
        check_input_file(path, "weights")
    except InputFileError as exc:
        return "is missing" if not os.path.lexists(path) else f"is unusable ({exc})"
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if not path.name.endswith(".safetensors"):
                return None if size > 0 else "is empty"
            head = fh.read(8)
            if len(head) < 8:
                return "is truncated (no safetensors header)"
            (length,) = struct.unpack("<Q", head)
            if length > min(size - 8, _SAFETENSORS_HEADER_MAX):
                return "is truncated (safetensors header runs past the end)"
            header = orjson.loads(fh.read(length))
    except FileNotFoundError:
        return "is missing"
    except OSError as exc:
        return f"is unreadable ({exc.strerror})"
    except ValueError:
        return "has a corrupt safetensors header"
    try:
        ends = [int(v["data_offsets"][1]) for k, v in header.items() if k != "__metadata__"]
    except (AttributeError, TypeError, KeyError, IndexError, ValueError):
        return "has a corrupt safetensors header"
    expected = 8 + length + max(ends, default=0)
    if expected != size:
        return f"has {size} bytes, its safetensors header says {expected}"
    return None
