"""Real published hub configs at full size, traced with `weights: fake` through the real CLI.

Twelve configs (tests/fixtures/hub_configs: 7B-405B decoders, DeepSeek-V3's MLA and fp8
quantization config, Mixtral-8x22B, a Qwen MoE, an encoder-decoder, a vision-language
model) are served by the local test hub as repos that also hold large weight files. One
`kerneltracer run` at 4,096 tokens must end every job ok, mark it fake, record the weight
shapes and attention geometry each config names, stay under 1.5 GB per job, and never ask
the hub for a weight file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.fakeweights.shapes import Shape, expected, missing
from tests.helpers import FIXTURES, kt, status_of, write_config
from tests.hub.hubserver import LocalHub, Repo, make_repo, running_hub

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CONFIGS = FIXTURES / "hub_configs"
SEQ_LEN = 4096
MAX_RSS = int(1.5e9)
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf", ".onnx", ".msgpack", ".h5")
# print_aten traces the whole forward again through Dynamo and AOTAutograd, which costs about
# 2-3 s per layer on one core at full depth (measured: Phi-3-medium 72 s, flan-t5-xxl 107 s,
# DeepSeek-V3 199 s of tracing): one 32-layer model shows the graph tracer at full size within
# the file's budget; bench/bench_fake_weights.py has the rest.
GRAPHED = {"meta-llama/Llama-3.1-8B"}
# The bytes of a weight shard: big enough that fetching one would show up in time and disk,
# shared by every repo (the hub keeps repos in memory).
SHARD = b"\0" * (4 << 20)


@dataclass(frozen=True)
class Served:
    hub: LocalHub
    repos: dict[str, Repo]  # repo id → repo
    dirs: dict[str, Path]  # repo id → the config directory it serves


def _weights(index: int) -> dict[str, bytes]:
    """Weight files beside the config: single-file safetensors, a sharded set with its
    index, or safetensors plus a .bin duplicate, so every layout a hub repo has is served."""
    if index % 3 == 0:
        return {"model.safetensors": SHARD}
    if index % 3 == 1:
        names = [f"model-0000{i}-of-00002.safetensors" for i in (1, 2)]
        weight_map = {"lm_head.weight": names[1], "model.embed_tokens.weight": names[0]}
        index_json = {"metadata": {"total_size": 2 * len(SHARD)}, "weight_map": weight_map}
        return {
            names[0]: SHARD,
            names[1]: SHARD,
            "model.safetensors.index.json": json.dumps(index_json).encode(),
        }
    return {"model.safetensors": SHARD, "pytorch_model.bin": SHARD}


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    dirs = {p.name.replace("--", "/", 1): p for p in sorted(CONFIGS.iterdir()) if p.is_dir()}
    with running_hub() as hub:
        repos = {
            rid: hub.add(make_repo(rid, d, _weights(i))) for i, (rid, d) in enumerate(dirs.items())
        }
        yield Served(hub, repos, dirs)


def _env(tmp_path: Path, hub: LocalHub) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "KT_", "TORCH"))}
    env.pop("TRANSFORMERS_OFFLINE", None)
    env.update(
        {
            "HF_HOME": str(tmp_path / "hf-home"),
            "HF_ENDPOINT": hub.endpoint,
            "HF_HUB_DISABLE_XET": "1",
            "HF_HUB_DISABLE_TELEMETRY": "1",
            "OMP_NUM_THREADS": "1",
            "COLUMNS": "200",
        }
    )
    return env


def _calls(job_dir: Path) -> list[tuple[str, list[Shape]]]:
    """(op, input tensor shapes) per recorded signature of a torch_dispatch job."""
    calls = []
    for line in (job_dir / "dispatch_ops.jsonl").read_text().splitlines():
        row = json.loads(line)
        shapes = [tuple(a["shape"]) for a in row["inputs"] if isinstance(a, dict) and "shape" in a]
        calls.append((row["op"], shapes))
    return calls


def _resolved(config_dir: Path) -> dict[str, Any]:
    """The config as transformers resolves it (defaults filled in, nested configs too)."""
    import transformers

    return dict(transformers.AutoConfig.from_pretrained(config_dir).to_dict())


def test_published_configs_trace_at_full_size_without_weights(
    tmp_path: Path, served: Served
) -> None:
    models: list[dict[str, Any]] = [
        {"id": rid, "tracers": ["torch_dispatch", "print_aten"]} if rid in GRAPHED else {"id": rid}
        for rid in served.repos
    ]
    cfg = write_config(
        tmp_path / "config.yaml",
        models,
        defaults={
            "weights": "fake",
            "seq_len": SEQ_LEN,
            "tracers": ["torch_dispatch"],
            "timeout_s": 600,
        },
        download={"timeout_s": 120},
    )
    proc = kt("run", str(cfg), "-j", "2", env=_env(tmp_path, served.hub), timeout=1500)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run_dir = tmp_path / "run"

    problems = []
    for rid, config_dir in served.dirs.items():
        slug = rid.replace("/", "--")
        tracers = ["torch_dispatch", "print_aten"] if rid in GRAPHED else ["torch_dispatch"]
        for tracer in tracers:
            st = status_of(run_dir, f"{slug}/{tracer}")
            if st["status"] != "ok":
                problems.append(f"{rid} {tracer}: {st['status']} {st.get('reason')}")
                continue
            if st.get("weights") != "fake" or st["request"].get("weights") != "fake":
                problems.append(f"{rid} {tracer}: not marked fake")
            if not 0 < st["peak_rss_bytes"] < MAX_RSS:
                problems.append(f"{rid} {tracer}: peak RSS {st['peak_rss_bytes'] / 1e9:.2f} GB")
        gaps = missing(
            expected(_resolved(config_dir)), _calls(run_dir / "jobs" / slug / "torch_dispatch")
        )
        problems += [f"{rid}: {gap}" for gap in gaps]
    assert not problems, "\n".join(problems)

    for rid in GRAPHED:
        graphs = run_dir / "jobs" / rid.replace("/", "--") / "print_aten" / "graphs"
        assert sorted(graphs.glob("graph_*.txt")), f"{rid}: print_aten wrote no graph"

    for rid in served.repos:
        asked = [r.path for r in served.hub.requests_for(rid) if "/resolve/" in r.path]
        # The control: the download did go to this hub for this repo's config.
        assert any(p.endswith("/config.json") for p in asked), (rid, asked)
        weights = [p for p in asked if p.endswith(WEIGHT_SUFFIXES)]
        assert not weights, f"{rid}: weight files requested: {weights}"
