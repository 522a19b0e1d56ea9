"""Hostile inputs of the fleet commands added since the last round (issue 38): ``corpus``
(with its BackendBench export), ``coverage`` and ``readiness`` never print ``internal
error``; damaged ``dispatch_ops.jsonl`` lines are counted per job, outputs are all written
or none; support lists have strict values and no silent duplicates.

The CLI table runs the real command in a subprocess; the fuzz test drives the same library
functions the commands call with random damage to every field of a dispatch row.
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kerneltracer.corpus.build import build_corpus
from kerneltracer.corpus.export import write_corpus
from kerneltracer.coverage import build_coverage, write_coverage
from kerneltracer.errors import KernelTracerError
from tests.coverage.synth import dispatch_files, make_job
from tests.helpers import kt

if TYPE_CHECKING:
    from kerneltracer.corpus.backendbench import TorchRegistry

CORPUS_FILES = ("corpus.parquet", "operator_inp.txt", "corpus_summary.json", "backendbench.parquet")
COVERAGE_FILES = (
    "coverage.csv",
    "coverage.parquet",
    "coverage_matrix.csv",
    "coverage_summary.json",
)


def _t(shape: Any, dtype: Any = "float32", **extra: Any) -> dict[str, Any]:
    return {"shape": shape, "dtype": dtype, "device": "cpu", **extra}


def _row(**override: Any) -> dict[str, Any]:
    row = {
        "op": "aten.mm.default",
        "phase": "forward",
        "count": 3,
        "inputs": [_t([2, 4]), _t([4, 3])],
        "kwargs": {},
        "outputs": [_t([2, 3])],
        "modules": {"model.proj": 3},
    }
    return {**row, **override}


def _lines(*rows: dict[str, Any] | str) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)


def _dispatch_job(run: Path, model: str, jsonl: str) -> None:
    files = dispatch_files({"aten.mm.default": (3, 1), "aten.add.Tensor": (2, 1)})
    make_job(run, model, "torch_dispatch", {**files, "dispatch_ops.jsonl": jsonl})


GOOD = _row()
ADD = _row(op="aten.add.Tensor", count=2, inputs=[_t([2, 3]), _t([3])], modules={})
# One damaged line among good ones, as the issue found them (and a few more of each kind).
DAMAGED: dict[str, str] = {
    "modules-value-not-int": json.dumps(_row(modules={"a": "notanint"})),
    "modules-a-list": json.dumps(_row(modules=[1, 2])),
    "modules-negative": json.dumps(_row(modules={"a": -1})),
    "modules-bool": json.dumps(_row(modules={"a": True})),
    "count-2**70": json.dumps(_row(count=2**70)),  # orjson reads it as a float
    "count-2**63": json.dumps(_row(count=2**63)),
    "count-string": json.dumps(_row(count="3")),
    "shape-not-a-list": json.dumps(_row(inputs=[_t(7), _t([4, 3])])),
    "shape-huge": json.dumps(_row(inputs=[_t([2**62, 2**62]), _t([2**62, 3])])),
    "stride-not-a-list": json.dumps(_row(inputs=[_t([2, 4], stride=5), _t([4, 3])])),
    "dtype-not-a-string": json.dumps(_row(inputs=[_t([2, 4], dtype=[1]), _t([4, 3])])),
    "kwargs-a-list": json.dumps(_row(kwargs=[1])),
    "op-not-a-string": json.dumps(_row(op=["aten.mm.default"])),
    "phase-an-object": json.dumps(_row(phase={"x": 1})),
    "not-json": "{not json",
    "a-list": "[1, 2]",
}


@pytest.mark.parametrize("case", sorted(DAMAGED))
def test_a_damaged_dispatch_line_is_counted_by_corpus_and_coverage(
    tmp_path: Path, case: str
) -> None:
    run = tmp_path / "run"
    _dispatch_job(run, "org/a", _lines(GOOD, DAMAGED[case], ADD))
    _dispatch_job(run, "org/b", _lines(GOOD))
    out = tmp_path / "corpus"
    done = kt("corpus", str(run), "-o", str(out))
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stderr
    # Counted per job: one line for the job, with how many lines and the first reason.
    (line,) = [ln for ln in done.stderr.splitlines() if "dispatch_ops.jsonl" in ln]
    assert re.search(r"org-a/torch_dispatch.*dispatch_ops.jsonl: 1 bad line\(s\) skipped", line)
    assert "line 2" in line
    assert all((out / name).is_file() for name in CORPUS_FILES)
    summary = json.loads((out / "corpus_summary.json").read_text())
    assert summary["calls"] == 3 + 2 + 3  # the good rows of both jobs, nothing of the bad one
    strict = kt("corpus", str(run), "-o", str(tmp_path / "strict"), "--strict")
    assert strict.returncode == 1 and "internal error" not in strict.stderr, strict.stderr

    cov_out = tmp_path / "coverage"
    done = kt("coverage", str(run), "-o", str(cov_out))
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stderr
    assert all((cov_out / name).is_file() for name in COVERAGE_FILES), sorted(cov_out.iterdir())
    summary = json.loads((cov_out / "coverage_summary.json").read_text())
    bad = [b for b in summary["bad_rows"] if b["path"].endswith("dispatch_ops.jsonl")]
    assert len(bad) == 1 and sum(bad[0]["counts"].values()) == 1, summary["bad_rows"]
    assert "jobs/org-a/" in bad[0]["path"]


def test_coverage_writes_every_file_or_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A value the Parquet file cannot hold must fail before the CSV is written."""
    run = tmp_path / "run"
    _dispatch_job(run, "org/a", _lines(GOOD))
    cov = build_coverage(run)
    from kerneltracer.coverage.matrix import OpUse

    huge = OpUse("aten.x.default", "org/a", "torch_dispatch", 2**64, 1, None)
    object.__setattr__(cov, "uses", (*cov.uses, huge))
    out = tmp_path / "out"
    with pytest.raises(KernelTracerError):
        write_coverage(cov, out)
    assert not out.exists() or not any(out.iterdir()), sorted(out.iterdir())


SUPPORT: dict[str, tuple[str, str, str]] = {
    # name: (file name, content, regex of the one error line)
    "csv-maybe": (
        "s.csv",
        "op,supported\naten.mm.default,yes\naten.bmm.default,maybe\n",
        r"s.csv:3: supported: 'maybe' is not a yes/no value; use one of: .*yes.*no",
    ),
    "csv-empty-flag": (
        "s.csv",
        "op,supported\naten.mm.default,\n",
        r"s.csv:2: supported: '' is not a yes/no value; use one of:",
    ),
    "csv-duplicate": (
        "s.csv",
        "op,supported\naten.mm.default,no\naten.bmm.default,yes\naten.mm.default,yes\n",
        r"s.csv:4: aten.mm.default is listed twice \(first at line 2\)",
    ),
    "csv-duplicate-spelling": (
        "s.csv",
        "op\naten::addmm\naddmm\n",
        r"s.csv:3: aten.addmm is listed twice \(first at line 2\)",
    ),
    "yaml-duplicate": (
        "s.yaml",
        "ops:\n  - aten.mm.default\n  - addmm\n  - aten.mm.default\n",
        r"s.yaml:4: aten.mm.default is listed twice \(first at line 2\)",
    ),
    "yaml-supported-maybe": (
        "s.yaml",
        "supported: maybe\n",
        r"s.yaml: expected a list of op names",
    ),
}


@pytest.mark.parametrize("case", sorted(SUPPORT))
def test_support_list_values_are_strict(tmp_path: Path, case: str) -> None:
    name, text, pattern = SUPPORT[case]
    run = tmp_path / "run"
    _dispatch_job(run, "org/a", _lines(GOOD))
    corpus = tmp_path / "corpus"
    assert kt("corpus", str(run), "-o", str(corpus)).returncode == 0
    (tmp_path / name).write_text(text)
    done = kt("readiness", str(run), "--support", str(tmp_path / name), cwd=tmp_path)
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2, done.stdout + done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and re.search(pattern, last), last


# ---------------------------------------------------------------- fuzz

_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
    st.sampled_from(["'f16", "\"'f16", "f16", "__import__('os').system('touch pwned')", "\n"]),
)
_value = st.recursive(
    _scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["shape", "dtype", "stride", "$", "v", "min", "k"]),
                        inner, max_size=4),
    ),
    max_leaves=12,
)  # fmt: skip
_FIELDS = ("op", "phase", "count", "inputs", "kwargs", "outputs", "modules")


@pytest.fixture(scope="module")
def registry() -> TorchRegistry:
    from kerneltracer.corpus.backendbench import torch_registry

    return torch_registry(["aten.mm.default", "aten.add.Tensor"])


@_SETTINGS
@given(field=st.sampled_from(_FIELDS), value=_value)
@example(field="modules", value={"a": "notanint"})
@example(field="modules", value=[1, 2])
@example(field="count", value=2**63)
@example(field="inputs", value=[{"shape": 5, "dtype": "float32"}])
def test_any_damage_to_a_dispatch_row_is_counted_never_a_crash(
    registry: TorchRegistry, field: str, value: Any
) -> None:
    from kerneltracer.corpus.backendbench import write_backendbench

    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        _dispatch_job(run, "org/a", _lines(GOOD, _row(**{field: value}), ADD))
        corpus = build_corpus(run)
        assert {s.op for s in corpus.signatures} >= {"aten.mm.default", "aten.add.Tensor"}
        try:
            write_corpus(corpus, Path(tmp) / "corpus")
            write_backendbench(corpus.signatures, Path(tmp) / "corpus", registry)
        except KernelTracerError:
            pass
        cov = build_coverage(run)
        try:
            write_coverage(cov, Path(tmp) / "coverage")
        except KernelTracerError:
            assert not (Path(tmp) / "coverage" / "coverage.csv").exists()
