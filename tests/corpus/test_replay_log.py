"""`kerneltracer replay` on an operator_inp log: --strict refuses malformed lines before any
worker starts; without it, the readable entries replay (no recorded outputs to check)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tests.helpers import kt

pytestmark = pytest.mark.e2e

LOG = """Operator: aten.mm.default
cnt: 3, ((T([2, 3], f32), T([3, 4], f32, stride=(1, 3))), {})
cnt: 1, ((T([2, 3], f32), __import__('os')), {})
Operator: aten.embedding.default
cnt: 2, ((T([10, 4], f32), T([1, 5], i64, min=0, max=9)), {})
"""


def test_strict_refuses_a_malformed_log(tmp_path: Path) -> None:
    log = tmp_path / "bert.txt"
    log.write_text(LOG)
    proc = kt("replay", str(log), "--strict")
    assert proc.returncode == 1
    assert "malformed lines (entry): 1" in proc.stderr
    assert "1 malformed line(s) and --strict" in proc.stderr
    assert not (tmp_path / "replay").exists()


def test_readable_entries_of_a_log_replay(tmp_path: Path) -> None:
    log = tmp_path / "bert.txt"
    log.write_text(LOG)
    proc = kt("replay", str(log), "--repeats", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with (tmp_path / "replay" / "replay.csv").open(newline="") as fh:
        rows = {r["op"]: r for r in csv.DictReader(fh)}
    assert set(rows) == {"aten.mm.default", "aten.embedding.default"}
    assert {r["status"] for r in rows.values()} == {"ok"}
    assert rows["aten.mm.default"]["models"] == "bert" and rows["aten.mm.default"]["calls"] == "3"
