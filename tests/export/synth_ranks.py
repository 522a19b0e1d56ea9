"""Parallel jobs' rank dirs written by hand from published configs, the way the worker's rank
simulation writes them (``rank_<r>/dispatch_ops.jsonl`` + ``collectives.jsonl``): per-rank
GEMMs are the config's divided by the degree on the sharded axis, collectives the analytical
ones per layer."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kerneltracer.core.layout import JobPaths
from kerneltracer.core.parallel import CollectiveRecord, Layout

BF16 = 2


@dataclass(frozen=True)
class Dense:
    """A Llama-style decoder: Llama-3-70B by default (80 layers, cut to ``layers`` here)."""

    hidden: int = 8192
    heads: int = 64
    kv_heads: int = 8
    head_dim: int = 128
    intermediate: int = 28672
    vocab: int = 128256
    layers: int = 2
    seq: int = 2048


def _t(shape: list[int]) -> dict[str, Any]:
    return {"shape": shape, "dtype": "bfloat16", "device": "meta"}


def _mm(m: int, k: int, n: int, modules: dict[str, int]) -> dict[str, Any]:
    return {
        "op": "aten.mm.default",
        "phase": "forward",
        "count": sum(modules.values()),
        "inputs": [_t([m, k]), _t([k, n])],
        "kwargs": {},
        "outputs": [_t([m, n])],
        "modules": modules,
    }


def _per_layer(layers: list[int], prefix: str, *names: str) -> dict[str, int]:
    return {f"{prefix}.{i}.{name}": 1 for i in layers for name in names}


def dense_rows(cfg: Dense, tp: int, layers: list[int]) -> list[dict[str, Any]]:
    """One TP rank's dispatch rows (sorted by op as the tracer writes them)."""
    s, h, p = cfg.seq, cfg.hidden, "model.layers"
    q = cfg.heads // tp * cfg.head_dim
    kv = cfg.kv_heads // tp * cfg.head_dim
    ffn = cfg.intermediate // tp
    norm = {
        "op": "aten.mul.Tensor",
        "phase": "forward",
        "count": 2 * len(layers),
        "inputs": [_t([1, s, h]), _t([1, s, h])],
        "kwargs": {},
        "outputs": [_t([1, s, h])],
        "modules": _per_layer(layers, p, "input_layernorm", "post_attention_layernorm"),
    }
    rows = [
        _mm(s, h, q, _per_layer(layers, p, "self_attn.q_proj")),
        _mm(s, h, kv, _per_layer(layers, p, "self_attn.k_proj", "self_attn.v_proj")),
        _mm(s, q, h, _per_layer(layers, p, "self_attn.o_proj")),
        _mm(s, h, ffn, _per_layer(layers, p, "mlp.gate_proj", "mlp.up_proj")),
        _mm(s, ffn, h, _per_layer(layers, p, "mlp.down_proj")),
        norm,
    ]
    if layers and layers[-1] == cfg.layers - 1:
        rows.append(_mm(s, h, cfg.vocab // tp, {"lm_head": 1}))
    return rows


def dense_collectives(
    cfg: Dense, tp: int, layers: list[int], first_seq: int = 0
) -> list[CollectiveRecord]:
    """Two all_reduce of (1, S, H) per layer (after o_proj and down_proj), and the logits'
    all_gather after the last layer."""
    act = (1, cfg.seq, cfg.hidden)
    out: list[CollectiveRecord] = []

    def add(kind: str, shape: tuple[int, ...], module: str) -> None:
        size = BF16
        for d in shape:
            size *= d
        out.append(
            CollectiveRecord(
                seq=first_seq + len(out),
                kind=kind,
                group="tp",
                group_size=tp,
                dtype="bfloat16",
                shape=shape,
                bytes_per_rank=size,
                op=f"_c10d_functional.{kind}.default",
                module=module,
            )
        )

    for i in layers:
        add("all_reduce", act, f"model.layers.{i}.self_attn.o_proj")
        add("all_reduce", act, f"model.layers.{i}.mlp.down_proj")
    if layers and layers[-1] == cfg.layers - 1:
        add("all_gather", (1, cfg.seq, cfg.vocab // tp), "lm_head")
    return out


def write_rank(
    job_dir: Path, rank: int, rows: list[dict[str, Any]], records: list[CollectiveRecord]
) -> None:
    paths = JobPaths(job_dir)
    paths.rank(rank).mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(r) + "\n" for r in rows)
    (paths.rank(rank) / "dispatch_ops.jsonl").write_text(text)
    paths.collectives(rank).write_bytes(b"".join(r.to_json_line() + b"\n" for r in records))


def write_spec(job_dir: Path, layout: Layout) -> None:
    """The ``parallel`` mapping of the job's spec, all the readers take from it."""
    job_dir.mkdir(parents=True, exist_ok=True)
    JobPaths(job_dir).job_file.write_text(json.dumps({"options": {"parallel": layout.to_json()}}))


def dense_tp_job(job_dir: Path, cfg: Dense, tp: int) -> Layout:
    layout = Layout(tp=tp)
    layers = list(range(cfg.layers))
    for rank in range(tp):
        write_rank(job_dir, rank, dense_rows(cfg, tp, layers), dense_collectives(cfg, tp, layers))
    return layout


def dense_tp_pp_job(job_dir: Path, cfg: Dense, tp: int, pp: int) -> Layout:
    """Stages hold consecutive layers; each stage but the last sends its activation on."""
    layout = Layout(tp=tp, pp=pp)
    per_stage = cfg.layers // pp
    act = (1, cfg.seq, cfg.hidden)
    size = BF16 * cfg.seq * cfg.hidden
    for rank in range(layout.world_size):
        stage = layout.coords(rank)["pp"]
        layers = list(range(stage * per_stage, (stage + 1) * per_stage))
        records: list[CollectiveRecord] = []

        def p2p(kind: str, peer_stage: int, seq: int, rank: int = rank) -> CollectiveRecord:
            peer = layout.rank_of({**layout.coords(rank), "pp": peer_stage})
            return CollectiveRecord(
                seq, kind, "pp", pp, "bfloat16", act, size, f"c10d.{kind}", None, peer=peer
            )

        if stage > 0:
            records.append(p2p("recv", stage - 1, 0))
        records += dense_collectives(cfg, tp, layers, first_seq=len(records))
        if stage < pp - 1:
            records.append(p2p("send", stage + 1, len(records)))
        write_rank(job_dir, rank, dense_rows(cfg, tp, layers), records)
    return layout


def moe_ep_job(job_dir: Path, ep: int, known: bool) -> Layout:
    """Mixtral-8x22B at EP 8 (hidden 6144, 8 experts, top-2, expert FFN 16384), one layer:
    each rank holds one expert; the dispatch and combine all_to_all's bytes depend on the
    routing, which a fake run cannot know: unknown, or under balanced routing."""
    seq, hidden, ffn, top_k = 2048, 6144, 16384, 2
    layout = Layout(ep=ep)
    tokens = seq * top_k // ep  # balanced routing: each expert gets its share
    size = tokens * ep * hidden * BF16 if known else None  # this rank's dispatch buffer
    for rank in range(ep):
        expert = f"model.layers.0.block_sparse_moe.experts.{rank}"
        rows = [
            _mm(seq, hidden, 4096 + 1024, {"model.layers.0.self_attn.qkv": 1}),
            _mm(tokens, hidden, ffn, {f"{expert}.w1": 1, f"{expert}.w3": 1}),
            _mm(tokens, ffn, hidden, {f"{expert}.w2": 1}),
        ]
        records = [
            CollectiveRecord(
                seq=i,
                kind="all_to_all",
                group="ep",
                group_size=ep,
                dtype="bfloat16",
                shape=(tokens * ep, hidden),
                bytes_per_rank=size,
                op="_c10d_functional.all_to_all_single.default",
                module="model.layers.0.block_sparse_moe",
                assumption="balanced routing" if known else None,
            )
            for i in range(2)
        ]
        write_rank(job_dir, rank, rows, records)
    return layout


def keep_roles(job_dir: Path, layout: Layout, spec: bool = True) -> dict[int, list[int]]:
    """The job as the rank simulation leaves it: one dir per (pp stage, ep rank) role, tp
    and dp peers only listed in ``roles.json``; the layout in JOB.json's ``parallel``."""
    import shutil

    roles: dict[int, list[int]] = {}
    for rank in range(layout.world_size):
        c = layout.coords(rank)
        role = layout.rank_of({**c, "tp": 0, "dp": 0})
        roles.setdefault(role, []).append(rank)
    for rank in range(layout.world_size):
        if rank not in roles:
            shutil.rmtree(JobPaths(job_dir).rank(rank))
    doc = {
        "layout": layout.to_json(),
        "label": layout.label(),
        "world_size": layout.world_size,
        "roles": [{"rank": r, "ranks": peers} for r, peers in roles.items()],
    }
    (job_dir / "roles.json").write_text(json.dumps(doc))
    if spec:
        JobPaths(job_dir).job_file.write_text(json.dumps({"parallel": layout.to_json()}))
    return roles
