"""Published configs in the layouts they are deployed in, simulated with `weights: fake`.

One `kerneltracer run` through the local test hub (config-only repos that also hold weight
files): dense 70B and 405B at TP 8 and TP 8 x PP 2, Qwen2.5-72B at TP 8, Mixtral-8x22B,
Qwen3-30B-A3B and DeepSeek-V3 (MLA) at EP 8, Llama-3.1-8B training under FSDP 8 and TP 8, and
flan-t5-xxl at TP 4 (T5 ships no tensor-parallel plan: unsupported, saying so). Two layers
each (`parallel.layers`), 128 tokens: every job ends as expected, each rank's GEMMs are the
config's sizes divided on the right axis, the collectives equal the hand count
(tests/parallel/formulas.py), peak RSS stays under 2 GB and no weight file is asked for.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakeweights.test_full_size_e2e import SHARD, WEIGHT_SUFFIXES, _env
from tests.helpers import FIXTURES, kt, status_of, write_config
from tests.hub.hubserver import LocalHub, make_repo, running_hub
from tests.parallel import formulas

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CONFIGS = FIXTURES / "hub_configs"
SEQ, LAYERS, MAX_RSS = 128, 2, int(2e9)
GRAPHED = "meta-llama/Llama-3.1-8B"
BF16 = 2

# (repo id, parallel, mode, expected status)
JOBS: list[tuple[str, dict[str, Any], str, str]] = [
    ("meta-llama/Llama-3.3-70B-Instruct", {"tp": 8}, "eval", "ok"),
    ("meta-llama/Llama-3.3-70B-Instruct", {"tp": 8, "pp": 2}, "eval", "ok"),
    ("meta-llama/Llama-3.1-405B", {"tp": 8}, "eval", "ok"),
    ("meta-llama/Llama-3.1-405B", {"tp": 8, "pp": 2}, "eval", "ok"),
    ("Qwen/Qwen2.5-72B-Instruct", {"tp": 8}, "eval", "ok"),
    ("google/gemma-2-27b", {"tp": 8}, "eval", "ok"),  # its LM head is tied to the embedding
    ("mistralai/Mixtral-8x22B-v0.1", {"ep": 8}, "eval", "ok"),
    ("Qwen/Qwen3-30B-A3B", {"ep": 8}, "eval", "ok"),
    ("deepseek-ai/DeepSeek-V3", {"ep": 8}, "eval", "ok"),
    ("meta-llama/Llama-3.1-8B", {"dp": 8, "fsdp": True}, "train", "ok"),
    ("meta-llama/Llama-3.1-8B", {"tp": 8}, "train", "ok"),
    ("google/flan-t5-xxl", {"tp": 4}, "eval", "unsupported"),
]


def _label(parallel: dict[str, Any]) -> str:
    parts = [f"{a}{parallel[a]}" for a in ("tp", "ep", "pp") if parallel.get(a, 1) > 1]
    if parallel.get("dp", 1) > 1:
        parts.append(("fsdp" if parallel.get("fsdp") else "dp") + str(parallel["dp"]))
    return ".".join(parts)


def _key(rid: str, parallel: dict[str, Any], mode: str) -> str:
    return f"{rid.replace('/', '--')}/torch_dispatch{'.train' if mode == 'train' else ''}." + (
        _label(parallel)
    )


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, LocalHub]]:
    tmp = tmp_path_factory.mktemp("layouts")
    rids = sorted({rid for rid, *_ in JOBS})
    with running_hub() as hub:
        for rid in rids:
            hub.add(make_repo(rid, CONFIGS / rid.replace("/", "--"), {"model.safetensors": SHARD}))
        models = [
            {"id": rid, "mode": mode, "parallel": {**parallel, "layers": LAYERS}}
            for rid, parallel, mode, _ in JOBS
        ]
        # A graph tracer per rank too: Dynamo's graph of a TP 8 rank.
        models.append(
            {
                "id": GRAPHED,
                "name": "graphed",
                "tracers": ["print_fx"],
                "parallel": {"tp": 8, "layers": LAYERS},
            }
        )
        cfg = write_config(
            tmp / "config.yaml",
            models,
            defaults={
                "weights": "fake",
                "seq_len": SEQ,
                "tracers": ["torch_dispatch"],
                "timeout_s": 600,
            },
            download={"timeout_s": 120},
        )
        proc = kt("run", str(cfg), "-j", "2", env=_env(tmp, hub), timeout=900)
        # flan-t5-xxl ends unsupported: the run says so but fails nothing.
        assert proc.returncode in (0, 1), proc.stdout[-3000:] + proc.stderr[-3000:]
        yield tmp / "run", hub


def _records(job_dir: Path, rank: int) -> list[tuple[str, str, int | None]]:
    lines = (job_dir / f"rank_{rank}" / "collectives.jsonl").read_text().splitlines()
    return [(r["kind"], r["group"], r["bytes_per_rank"]) for r in (json.loads(x) for x in lines)]


def _mm_weights(job_dir: Path, rank: int) -> set[tuple[int, ...]]:
    """The weight operand's shape of every GEMM the rank ran (transposed: in x out); a
    linear with a bias (Qwen2's q, k, v) is an addmm."""
    out = set()
    for line in (job_dir / f"rank_{rank}" / "dispatch_ops.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row["op"] == "aten.mm.default":
            out.add(tuple(row["inputs"][1]["shape"]))
        elif row["op"] == "aten.addmm.default":
            out.add(tuple(row["inputs"][2]["shape"]))
    return out


def _config(rid: str) -> dict[str, Any]:
    return dict(json.loads((CONFIGS / rid.replace("/", "--") / "config.json").read_text()))


def test_every_layout_ends_as_expected_within_memory(run: tuple[Path, LocalHub]) -> None:
    run_dir, _ = run
    problems = []
    for rid, parallel, mode, want in JOBS:
        st = status_of(run_dir, _key(rid, parallel, mode))
        if st["status"] != want:
            problems.append(f"{rid} {parallel}: {st['status']} {st.get('reason')}")
        elif want == "ok" and not 0 < st["peak_rss_bytes"] < MAX_RSS:
            problems.append(f"{rid} {parallel}: peak RSS {st['peak_rss_bytes'] / 1e9:.2f} GB")
    assert not problems, "\n".join(problems)
    t5 = status_of(run_dir, _key("google/flan-t5-xxl", {"tp": 4}, "eval"))
    assert "no `tp_plan`" in t5["reason"], t5["reason"]


def test_no_weight_file_is_read(run: tuple[Path, LocalHub]) -> None:
    _, hub = run
    for rid in {rid for rid, *_ in JOBS}:
        asked = [r.path for r in hub.requests_for(rid) if "/resolve/" in r.path]
        assert any(p.endswith("/config.json") for p in asked), (rid, asked)
        assert not [p for p in asked if p.endswith(WEIGHT_SUFFIXES)], (rid, asked)


@pytest.mark.parametrize(
    "rid",
    ["meta-llama/Llama-3.3-70B-Instruct", "meta-llama/Llama-3.1-405B", "Qwen/Qwen2.5-72B-Instruct"],
)
def test_tp8_gemms_and_collectives(run: tuple[Path, LocalHub], rid: str) -> None:
    run_dir, _ = run
    cfg, tp = _config(rid), 8
    job = run_dir / "jobs" / _key(rid, {"tp": tp}, "eval")
    h, i = cfg["hidden_size"], cfg["intermediate_size"]
    heads, kv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    d = h // heads
    want = {
        (h, heads * d // tp),
        (h, kv * d // tp),
        (heads * d // tp, h),
        (h, i // tp),
        (i // tp, h),
        (h, cfg["vocab_size"] // tp),
    }
    assert _mm_weights(job, 0) == want
    assert _records(job, 0) == formulas.tp_forward(cfg, 1, SEQ, tp, BF16, LAYERS)
    roles = json.loads((job / "roles.json").read_text())["roles"]
    assert [(r["rank"], r["ranks"]) for r in roles] == [(0, list(range(8)))]


@pytest.mark.parametrize("rid", ["meta-llama/Llama-3.3-70B-Instruct", "meta-llama/Llama-3.1-405B"])
def test_tp8_pp2_stages(run: tuple[Path, LocalHub], rid: str) -> None:
    run_dir, _ = run
    cfg = _config(rid)
    job = run_dir / "jobs" / _key(rid, {"tp": 8, "pp": 2}, "eval")
    roles = json.loads((job / "roles.json").read_text())["roles"]
    assert [(r["rank"], r["ranks"], r["layers"]) for r in roles] == [
        (0, list(range(8)), [0, 1]),
        (8, list(range(8, 16)), [1, 2]),
    ]
    for stage, rank in enumerate((0, 8)):
        assert _records(job, rank) == formulas.tp_pp_forward(cfg, 1, SEQ, 8, 2, stage, BF16, LAYERS)


@pytest.mark.parametrize(
    ("rid", "experts_key", "moe_layers"),
    [
        ("mistralai/Mixtral-8x22B-v0.1", "num_local_experts", 2),
        ("Qwen/Qwen3-30B-A3B", "num_experts", 2),
        ("deepseek-ai/DeepSeek-V3", "n_routed_experts", 1),
    ],  # layer 0 dense (first_k_dense)
)
def test_ep8_experts_and_all_to_all(
    run: tuple[Path, LocalHub], rid: str, experts_key: str, moe_layers: int
) -> None:
    run_dir, _ = run
    cfg, ep = _config(rid), 8
    experts, top_k = cfg[experts_key], cfg["num_experts_per_tok"]
    job = run_dir / "jobs" / _key(rid, {"ep": ep}, "eval")
    doc = json.loads((job / "roles.json").read_text())
    assert [r["rank"] for r in doc["roles"]] == list(range(ep))
    assert {r["experts_per_layer"] for r in doc["roles"]} == {experts // ep}
    local = experts // ep
    assert [r["experts"] for r in doc["roles"]] == [[i * local, (i + 1) * local] for i in range(ep)]
    assert any("balanced routing" in n for n in doc["notes"])
    for rank in range(ep):
        assert _records(job, rank) == formulas.ep_forward(
            cfg, 1, SEQ, ep, BF16, moe_layers, experts, top_k
        )
        lines = (job / f"rank_{rank}" / "collectives.jsonl").read_text().splitlines()
        tokens = [json.loads(x) for x in lines if '"bfloat16"' in x]
        assert all("balanced routing" in (r["assumption"] or "") for r in tokens)


def test_fsdp8_train_gathers_and_reduce_scatters_each_layer(run: tuple[Path, LocalHub]) -> None:
    run_dir, _ = run
    rid, dp = "meta-llama/Llama-3.1-8B", 8
    cfg = _config(rid)
    job = run_dir / "jobs" / _key(rid, {"dp": dp, "fsdp": True}, "train")
    records = _records(job, 0)
    gather, scatter = formulas.fsdp_train_layer(cfg, dp, BF16)
    assert records.count(gather) == 2 * LAYERS  # forward, and again for the backward
    assert records.count(scatter) == LAYERS
    phases = [
        json.loads(x)["phase"]
        for x in (job / "rank_0" / "collectives.jsonl").read_text().splitlines()
    ]
    assert {"forward", "backward"} <= set(phases)
    # Every rank's GEMMs use the whole weight (FSDP gathers it before the layer runs).
    h, i = cfg["hidden_size"], cfg["intermediate_size"]
    assert {(h, i), (i, h)} <= _mm_weights(job, 0)


def test_tp8_train_all_reduces_the_gradients_of_column_parallel_inputs(
    run: tuple[Path, LocalHub],
) -> None:
    run_dir, _ = run
    rid, tp = "meta-llama/Llama-3.1-8B", 8
    cfg = _config(rid)
    job = run_dir / "jobs" / _key(rid, {"tp": tp}, "train")
    rows = [json.loads(x) for x in (job / "rank_0" / "collectives.jsonl").read_text().splitlines()]
    forward = [
        (r["kind"], r["group"], r["bytes_per_rank"]) for r in rows if r["phase"] == "forward"
    ]
    backward = [
        (r["kind"], r["group"], r["bytes_per_rank"]) for r in rows if r["phase"] == "backward"
    ]
    assert forward == formulas.tp_forward(cfg, 1, SEQ, tp, BF16, LAYERS)
    assert backward == formulas.tp_backward(cfg, 1, SEQ, BF16, LAYERS)
    # Each backward all-reduce is named by the column-parallel linear whose input it sums.
    owners = [r["module"] for r in rows if r["phase"] == "backward"]
    per_layer = [
        "mlp.up_proj",
        "mlp.gate_proj",
        "self_attn.v_proj",
        "self_attn.k_proj",
        "self_attn.q_proj",
    ]
    assert owners == ["lm_head"] + [
        f"model.layers.{i}.{m}" for i in reversed(range(LAYERS)) for m in per_layer
    ]


def test_a_tied_lm_head_is_sharded_on_the_vocabulary(run: tuple[Path, LocalHub]) -> None:
    run_dir, _ = run
    rid, tp = "google/gemma-2-27b", 8
    cfg = _config(rid)
    job = run_dir / "jobs" / _key(rid, {"tp": tp}, "eval")
    h, v = cfg["hidden_size"], cfg["vocab_size"]
    assert (h, v // tp) in _mm_weights(job, 0)
    records = _records(job, 0)
    itemsize = 4  # the config's torch_dtype is float32
    assert records[-1] == ("all_gather", "tp", SEQ * (v // tp) * itemsize)
    assert records[:-1] == [("all_reduce", "tp", SEQ * h * itemsize)] * (2 * LAYERS)
    notes = json.loads((job / "roles.json").read_text())["notes"]
    assert any("tied LM head" in n for n in notes)


def test_status_lists_every_rank_output_with_its_kind(run: tuple[Path, LocalHub]) -> None:
    run_dir, _ = run
    st = status_of(run_dir, _key("meta-llama/Llama-3.1-405B", {"tp": 8, "pp": 2}, "eval"))
    kinds = {o["path"]: o["kind"] for o in st["outputs"]}
    assert kinds["rank_0/dispatch_ops.jsonl"] == "dispatch_signatures"
    assert kinds["rank_8/dispatch_ops.jsonl"] == "dispatch_signatures"
    assert {"rank_0/collectives.jsonl", "rank_8/collectives.jsonl", "roles.json"} <= set(kinds)
    assert any("naive pipeline" in n for n in st["notes"])


def test_print_fx_captures_a_ranks_graph_with_its_collectives(run: tuple[Path, LocalHub]) -> None:
    run_dir, _ = run
    st = status_of(run_dir, "graphed/print_fx.tp8")
    assert st["status"] == "ok", st.get("reason")
    cfg = _config(GRAPHED)
    h, i = cfg["hidden_size"], cfg["intermediate_size"]
    text = "\n".join(
        p.read_text()
        for p in (run_dir / "jobs" / "graphed" / "print_fx.tp8" / "rank_0" / "graphs").glob(
            "graph_*.txt"
        )
    )
    assert text.count("all_reduce") >= 2 * LAYERS
    assert f"[1, {SEQ}, {i // 8}]" in text  # the MLP's column shard
    assert f"[1, {SEQ}, {h}]" in text
