"""Corpus build, readiness and support lists on small synthetic inputs (no worker runs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kerneltracer.core.signature import signature_id
from kerneltracer.corpus.build import build_corpus
from kerneltracer.corpus.model import Signature
from kerneltracer.corpus.readiness import assess
from kerneltracer.corpus.support import Support, support_from_dispatch_key, support_from_file
from kerneltracer.errors import UsageError
from tests.coverage.synth import make_job


def _t(shape: list[int], dtype: str = "float32", **extra: Any) -> dict[str, Any]:
    return {"shape": shape, "dtype": dtype, "device": "cpu", **extra}


def _row(op: str, count: int, inputs: list[Any], phase: str = "forward") -> str:
    out = {
        "op": op,
        "phase": phase,
        "count": count,
        "inputs": inputs,
        "kwargs": {},
        "outputs": [_t([2, 4])],
        "modules": {"model.embed": count},
    }
    return json.dumps(out)


def test_build_merges_signatures_across_models_and_widens_ranges(tmp_path: Path) -> None:
    run = tmp_path / "run"
    emb_a = _row("aten.embedding.default", 2, [_t([10, 4]), _t([2], "int64", min=1, max=3)])
    emb_b = _row("aten.embedding.default", 5, [_t([10, 4]), _t([2], "int64", min=0, max=7)])
    emb_bw = _row(
        "aten.embedding.default", 1, [_t([10, 4]), _t([2], "int64", min=2, max=9)], phase="backward"
    )
    mm = _row("aten.mm.default", 3, [_t([2, 4]), _t([4, 4])])
    make_job(run, "org/a", "torch_dispatch", {"dispatch_ops.jsonl": emb_a + "\n" + mm + "\n"})
    make_job(
        run,
        "org/b",
        "torch_dispatch",
        {"dispatch_ops.jsonl": emb_b + "\n" + emb_bw + "\n{not json\n"},
    )
    make_job(run, "org/c", "torch_dispatch", {}, status="failed", reason="boom")
    corpus = build_corpus(run)
    assert corpus.models == ("org/a", "org/b")
    assert corpus.not_ok == [("org/c", "failed")]
    assert [p.reason for p in corpus.problems] == [
        "1 bad line(s) skipped (1 not_json); first: line 3: not valid JSON"
    ]
    assert corpus.problems[0].path.endswith("org-b/torch_dispatch/dispatch_ops.jsonl")
    emb, mm_sig = corpus.signatures
    assert (emb.op, mm_sig.op) == ("aten.embedding.default", "aten.mm.default")
    assert emb.model_calls == {"org/a": 2, "org/b": 6}
    assert emb.phase_calls == {"forward": 7, "backward": 1}
    assert emb.inputs[1]["min"] == 0 and emb.inputs[1]["max"] == 9
    assert emb.modules == {"model.embed": 8}
    assert emb.sig_id == signature_id(emb.op, [_t([10, 4]), _t([2], "int64")], {})


def _sig(op: str, calls: dict[str, int]) -> Signature:
    return Signature(signature_id(op, [], {}), op, [], {}, [], {"forward": 1}, calls)


SIGS = [
    _sig("aten.mm.default", {"m1": 10, "m2": 10, "m3": 10, "m4": 1}),
    _sig("aten.add.Tensor", {"m1": 5, "m2": 5, "m3": 5, "m4": 5}),
    _sig("aten.embedding.default", {"m1": 1, "m2": 1}),
    _sig("aten.index.Tensor", {"m2": 3}),
    _sig("aten.gelu.default", {"m3": 2, "m4": 2}),
]
ALL_OPS = sorted({s.op for s in SIGS})


def _listed(ops: list[str]) -> Support:
    return Support("test", set(ops).__contains__)


def test_readiness_lists_every_blocker_and_ranks_by_models_unblocked() -> None:
    missing = ["aten.embedding.default", "aten.index.Tensor", "aten.gelu.default"]
    r = assess(SIGS, _listed([op for op in ALL_OPS if op not in missing]))
    blocks = {m: [b.op for b in bs] for m, bs in r.blockers.items()}
    assert blocks == {
        "m1": ["aten.embedding.default"],
        "m2": ["aten.index.Tensor", "aten.embedding.default"],  # most calls first
        "m3": ["aten.gelu.default"],
        "m4": ["aten.gelu.default"],
    }
    ranked = [(o.op, o.models_blocked, o.newly_ready, o.ready_after) for o in r.ranked]
    assert ranked == [
        ("aten.gelu.default", ("m3", "m4"), 2, 2),
        ("aten.embedding.default", ("m1", "m2"), 1, 3),
        ("aten.index.Tensor", ("m2",), 1, 4),
    ]
    assert r.ranked[1].unblocks_alone == 1 and r.ranked[2].unblocks_alone == 0
    assert assess(SIGS, _listed(ALL_OPS)).ready_models == ["m1", "m2", "m3", "m4"]


def test_time_breaks_ties_between_equal_ops() -> None:
    sigs = [_sig("aten.a.default", {"m1": 1}), _sig("aten.b.default", {"m2": 1})]
    times = {sigs[1].sig_id: 50.0, sigs[0].sig_id: 5.0}
    r = assess(sigs, _listed([]), time_us=times)
    assert [o.op for o in r.ranked] == ["aten.b.default", "aten.a.default"]
    assert r.ranked[0].est_time_us == 50.0


def test_support_lists_yaml_and_csv(tmp_path: Path) -> None:
    yml = tmp_path / "s.yaml"
    yml.write_text("ops: [addmm, 'aten::add.Tensor', 'aten.em*']\n")
    s = support_from_file(yml)
    assert s.supports("aten.addmm.default") and s.supports("aten.add.Tensor")
    assert s.supports("aten.embedding.default") and not s.supports("aten.add.Scalar")
    csv_file = tmp_path / "s.csv"
    csv_file.write_text("op,supported\naten.mm.default,yes\naten.bmm.default,no\n")
    c = support_from_file(csv_file)
    assert c.supports("aten.mm.default") and not c.supports("aten.bmm.default")


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("s.toml", "x", "use one of: .csv, .yaml, .yml"),
        ("s.yaml", "{other: 1}", "one of the keys: ops, supported"),
        ("s.yaml", "ops: [1, 2]", "expected a list of op names"),
        ("s.csv", "name\nmm\n", "needs an 'op' column"),
    ],
)
def test_bad_support_lists_say_why(tmp_path: Path, name: str, text: str, message: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(UsageError, match=message):
        support_from_file(path)


def test_dispatch_key_support_comes_from_this_torch() -> None:
    meta = support_from_dispatch_key("Meta")
    assert meta.supports("aten.addmm.default") and meta.supports("aten.add.Tensor")
    assert not meta.supports("aten.no_such_op.default")
    with pytest.raises(
        UsageError, match=r"unknown dispatch key .Nope.; choose one of: .*PrivateUse1"
    ):
        support_from_dispatch_key("Nope")
