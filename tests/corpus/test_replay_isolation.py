"""Replay isolation: an op that kills its worker or hangs is pinned on its own signature,
and the signatures after it in the same batch still replay (real worker subprocesses)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

from kerneltracer.core.signature import signature_id
from kerneltracer.corpus.export import write_corpus
from kerneltracer.corpus.model import Corpus, Signature
from tests.conftest import REPO_ROOT
from tests.helpers import kt

pytestmark = pytest.mark.e2e


def _t(shape: list[int], dtype: str = "float32", **extra: Any) -> dict[str, Any]:
    return {"shape": shape, "dtype": dtype, "device": "cpu", **extra}


def _sig(op: str, inputs: list[Any], outputs: list[Any]) -> Signature:
    sid = signature_id(op, inputs, {})
    return Signature(sid, op, inputs, {}, outputs, {"forward": 2}, {"m": 2})


SIGS = [
    _sig("aten.add.Tensor", [_t([4, 4]), _t([4])], [_t([4, 4])]),
    _sig("kt_test.segfault.default", [_t([2])], [_t([2])]),
    # index values drawn beyond 0..9 would raise: the recorded range keeps them in bounds
    _sig("aten.index.Tensor", [_t([10, 3]), [_t([5], "int64", min=0, max=9)]], [_t([5, 3])]),
    _sig("kt_test.hang.default", [_t([2])], [_t([2])]),
    _sig("aten.mm.default", [_t([2, 3]), _t([3, 5])], [_t([2, 4])]),  # recorded shape is wrong
    _sig("aten.no_such_op.default", [], []),
    _sig("aten.gather.default", [_t([3, 8]), 1, _t([3, 2], "int64", min=0, max=7)], [_t([3, 2])]),
]


def test_crash_and_hang_are_isolated(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    write_corpus(Corpus(("m",), SIGS), corpus)
    proc = kt(
        "replay",
        str(corpus),
        "--import",
        "tests.fixtures.replay_ops",
        "--timeout",
        "3",
        "--repeats",
        "2",
        cwd=REPO_ROOT,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    with (corpus / "replay" / "replay.csv").open(newline="") as fh:
        rows = {r["op"]: r for r in csv.DictReader(fh)}
    status = {op: r["status"] for op, r in rows.items()}
    assert status == {
        "aten.add.Tensor": "ok",
        "kt_test.segfault.default": "crashed",
        "aten.index.Tensor": "ok",
        "kt_test.hang.default": "timeout",
        "aten.mm.default": "mismatch",
        "aten.no_such_op.default": "failed",
        "aten.gather.default": "ok",
    }
    assert "SIGSEGV" in rows["kt_test.segfault.default"]["reason"]
    assert "[[2, 5]] != recorded [[2, 4]]" in rows["aten.mm.default"]["reason"]
    assert "does not exist" in rows["aten.no_such_op.default"]["reason"]
    ok = [r for r in rows.values() if r["status"] == "ok"]
    assert all(
        float(r["time_us"]) > 0 and float(r["total_us"]) == 2 * float(r["time_us"]) for r in ok
    )
    assert "7 signature(s)" in proc.stdout and "1 crashed" in proc.stdout
