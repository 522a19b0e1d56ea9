"""backendbench.parquet: BackendBench's published columns and types, every ``args`` string
read back by BackendBench's deserialisation rules (tests/corpus/bb_reader.py), and the real
`kerneltracer corpus` CLI writing it on a small synthetic run dir."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from kerneltracer.core.signature import signature_id
from kerneltracer.corpus.backendbench import (
    PARQUET,
    arrow_schema,
    format_args,
    reads_back,
    rows_of,
    write_backendbench,
)
from kerneltracer.corpus.model import Signature
from tests.corpus.bb_reader import (
    Tensor,
    benchmark_dict,
    deserialize_args,
    expected,
    nan_safe,
    registry,
    resolve,
    runnable_rows,
)
from tests.coverage.synth import make_job
from tests.helpers import kt

# The columns of GPUMODE/backendbench_tests `backend_bench_problems.parquet` as documented in
# meta-pytorch/BackendBench `Torchbench.md` (Fields), with the Arrow types that
# `pa.Table.from_pylist` infers from the values BackendBench/data_loaders.py (6e00b3d2,
# `_parse_trace_stream`) and BackendBench/scripts/parquet_trace_converter.py (03e53f8c) put in
# each row: sha256 hex uuid, int counts, list-of-model-name in_models, list-of-reason
# why_excluded, NaN-or-milliseconds runtimes.
BACKENDBENCH_SCHEMA = pa.schema(
    [
        ("uuid", pa.string()),
        ("op_name", pa.string()),
        ("args", pa.string()),
        ("count", pa.int64()),
        ("is_synthetic", pa.bool_()),
        ("in_models", pa.list_(pa.string())),
        ("in_models_count", pa.int64()),
        ("included_in_benchmark", pa.bool_()),
        ("why_excluded", pa.list_(pa.string())),
        ("runtime_ms", pa.float64()),
        ("relative_runtime_to_kernel_launch", pa.float64()),
        ("runnable", pa.bool_()),
        ("is_overhead_dominated_op", pa.bool_()),
    ]
)


def _t(shape: list[Any], dtype: str = "float32", **extra: Any) -> dict[str, Any]:
    return {"shape": shape, "dtype": dtype, "device": "cpu", **extra}


def _tag(tag: str, v: str) -> dict[str, str]:
    return {"$": tag, "v": v}


def _sig(op: str, inputs: list[Any], kwargs: dict[str, Any], calls: dict[str, int]) -> Signature:
    return Signature(signature_id(op, inputs, kwargs), op, inputs, kwargs, [], {}, calls)


# Calls covering what torch_dispatch records: strides (transposed, expanded, 1-d, 0-d),
# integer ranges, every dtype family, tensor lists, scalars, None, tagged values, non-finite
# floats, nested dicts, strings (one spelled like a dtype abbreviation).
CALLS: list[tuple[str, list[Any], dict[str, Any]]] = [
    ("aten.addmm.default", [_t([768], "float16"), _t([2, 768], "float16"),
                            _t([768, 768], "float16", stride=[1, 768])], {}),
    ("aten.embedding.default", [_t([512, 64], "bfloat16"),
                                _t([1, 16], "int64", stride=[16, 1], min=0, max=511)], {}),
    ("aten.add.Tensor", [_t([2, 8, 16], stride=[0, 16, 1]), _t([16], stride=[2])], {"alpha": 1}),
    ("aten.where.self", [_t([4, 4], "bool"), _t([4, 4], "float64"), _t([], "float64")], {}),
    ("aten.cat.default", [[_t([2, 3], "int32"), _t([2, 5], "int32")], -1], {}),
    ("aten.masked_fill.Scalar", [_t([3], "float32"), _t([3], "bool"), _tag("float", "-inf")], {}),
    ("aten.clamp.default", [_t([3], "uint8"), None, 7], {}),
    ("aten.nan_to_num.default", [_t([5], "complex64"), _tag("float", "nan"),
                                 _tag("float", "inf"), -1.5e-05], {}),
    ("aten._to_copy.default", [_t([2, 2], "int8")],
     {"dtype": _tag("dtype", "float16"), "layout": _tag("layout", "strided"),
      "device": _tag("device", "cuda:1"), "pin_memory": False,
      "memory_format": _tag("memory_format", "channels_last")}),
    ("aten.empty_like.default", [_t([1, 3, 4, 4], "int16", stride=[48, 1, 12, 3])],
     {"memory_format": _tag("memory_format", "preserve_format")}),
    ("aten.gelu.default", [_t([8], "complex128")], {"approximate": "f16"}),
    ("aten.split_with_sizes.default", [_t([6], "int32"), [2, 4], 0], {}),
    ("aten.stack.default", [[_t([4, 0], stride=[1, 8]), _t([4, 0], stride=[1, 4])], 1], {}),
    ("aten.view.dtype", [_t([4], "float32"), _tag("dtype", "int32")], {}),
    ("aten.fill.Scalar", [_t([2], "float32"), "it's \"quoted\"\n\\", True, 3.25], {"x": {"k": 1}}),
]  # fmt: skip
REG = registry(*(c[0] for c in CALLS), "aten.mm.default", "aten.arange.start",
               "aten.bernoulli.default")  # fmt: skip


@pytest.mark.parametrize(("op", "inputs", "kwargs"), CALLS, ids=[c[0] for c in CALLS])
def test_args_round_trip_through_backendbench_deserialisation(
    op: str, inputs: list[Any], kwargs: dict[str, Any]
) -> None:
    text, why = format_args(inputs, kwargs, REG)
    assert why == []
    args, kw = deserialize_args(text)
    assert isinstance(args, tuple) and isinstance(kw, dict)
    assert nan_safe(list(args)) == nan_safe(expected(inputs))
    assert nan_safe(kw) == nan_safe(expected(kwargs))
    assert "min=" not in text and "device(" not in text


def test_the_pytorch_spelling_of_a_log_line_is_kept() -> None:
    text, _ = format_args(*CALLS[0][1:], REG)
    assert text == "((T([768], f16), T([2, 768], f16), T([768, 768], f16, stride=(1, 768))), {})"
    text, _ = format_args([_t([4], stride=[2])], {"device": _tag("device", "cuda:0")}, REG)
    assert text == "((T([4], f32, stride=(2,)),), {'device': 'cuda'})"


INJECTED = "float16), __import__('os').system('touch pwned'"


@pytest.mark.parametrize(
    ("value", "reason", "read_back"),
    [
        (_tag("opaque", "Generator"), "the opaque value <Generator>", "<Generator>"),
        (_t(["s0", 4]), "the symbolic size 's0'", Tensor(["s0", 4], torch.float32)),
        (_t([2], INJECTED), f"the dtype {INJECTED!r}", Tensor([2], INJECTED)),
        (_tag("layout", "strided + 1"), "the layout 'strided + 1'", "strided + 1"),
        (_tag("float", "1e400"), "the float value <1e400>", "<1e400>"),
    ],
)
def test_args_backendbench_cannot_rebuild_are_excluded_and_stay_data(
    value: Any, reason: str, read_back: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text, why = format_args([value], {}, REG)
    assert why == [f"{reason} cannot be rebuilt by BackendBench's args syntax"]
    monkeypatch.chdir(tmp_path)
    args, _ = deserialize_args(text)  # BackendBench evaluates args: text from a run stays data
    assert args == (read_back,)
    assert not (tmp_path / "pwned").exists()


def test_rows_merge_what_the_syntax_cannot_tell_apart() -> None:
    a = _sig("aten.mm.default", [_t([2, 4]), _t([4, 4])], {}, {"m2": 3, "m1": 1})
    b = _sig("aten.mm.default", [_t([8, 4]), _t([4, 4])], {}, {"m1": 9})
    emb = _sig(
        "aten.embedding.default", [_t([9, 2]), _t([3], "int64", min=0, max=2)], {}, {"m2": 4}
    )
    dev0 = _sig("aten.arange.start", [0, 4], {"device": _tag("device", "cuda:0")}, {"m1": 2})
    dev1 = _sig("aten.arange.start", [0, 4], {"device": _tag("device", "cuda:1")}, {"m3": 5})
    opaque = _sig("aten.bernoulli.default", [_t([2]), _tag("opaque", "Generator")], {}, {"m1": 1})
    rows = rows_of([a, b, emb, dev0, dev1, opaque], REG)
    assert [(r.op_name, r.count, sorted(r.models)) for r in rows] == [
        ("aten.arange.start", 7, ["m1", "m3"]),
        ("aten.bernoulli.default", 1, ["m1"]),
        ("aten.embedding.default", 4, ["m2"]),
        ("aten.mm.default", 9, ["m1"]),
        ("aten.mm.default", 4, ["m1", "m2"]),
    ]
    assert rows[0].args == "((0, 4), {'device': 'cuda'})"
    assert rows[2].args == "((T([9, 2], f32), T([3], i64)), {})"  # T takes no min/max
    assert [bool(r.why_excluded) for r in rows] == [False, True, False, False, False]


def test_file_has_backendbench_schema_and_fresh_trace_values(tmp_path: Path) -> None:
    sigs = [_sig(op, i, k, {"m1": n + 1, "m2": 1}) for n, (op, i, k) in enumerate(CALLS)]
    sigs.append(_sig("aten.bernoulli.default", [_tag("opaque", "Generator")], {}, {"m2": 2}))
    export = write_backendbench(sigs, tmp_path, REG)
    assert export.path == tmp_path / PARQUET
    assert (export.rows, export.excluded) == (len(CALLS) + 1, 1)
    schema = pq.read_schema(export.path)
    # BackendBench's columns, then ours (it reads rows as dicts: an extra key is ignored).
    ours = len(BACKENDBENCH_SCHEMA)
    assert schema.names == [*BACKENDBENCH_SCHEMA.names, "in_layouts"]
    assert [f.type for f in schema][:ours] == [f.type for f in BACKENDBENCH_SCHEMA]
    assert pa.schema(list(arrow_schema())[:ours]).equals(BACKENDBENCH_SCHEMA)
    rows = pq.read_table(export.path).to_pylist()
    by_op = {r["op_name"]: r for r in rows}
    for n, (op, inputs, kwargs) in enumerate(CALLS):
        row = by_op[op]
        assert row["args"] == format_args(inputs, kwargs, REG)[0]
        assert row["uuid"] == hashlib.sha256((row["args"] + op).encode()).hexdigest()
        assert (row["count"], row["in_models"], row["in_models_count"]) == (n + 2, ["m1", "m2"], 2)
        assert row["included_in_benchmark"] and row["runnable"] and row["why_excluded"] == []
        assert row["in_layouts"] == ["single"]
        assert not row["is_synthetic"] and not row["is_overhead_dominated_op"]
        assert math.isnan(row["runtime_ms"])
        assert math.isnan(row["relative_runtime_to_kernel_launch"])
    bad = by_op["aten.bernoulli.default"]
    assert not bad["included_in_benchmark"] and not bad["runnable"]
    assert bad["why_excluded"] == [
        "the opaque value <Generator> cannot be rebuilt by BackendBench's args syntax"
    ]
    assert "aten.bernoulli.default" not in benchmark_dict(export.path)


def _row(op: str, count: int, inputs: list[Any], kwargs: dict[str, Any] | None = None) -> str:
    row = {"op": op, "phase": "forward", "count": count, "inputs": inputs,
           "kwargs": kwargs or {}, "outputs": [], "modules": {}}  # fmt: skip
    return json.dumps(row) + "\n"


def test_corpus_cli_writes_a_file_backendbench_runs(tmp_path: Path) -> None:
    run = tmp_path / "run"
    mm = _row("aten.mm.default", 3, [_t([2, 4]), _t([4, 3], stride=[1, 4])])
    add = _row("aten.add.Tensor", 2, [_t([2, 3], "float16"), _t([3], "float16")], {"alpha": 2})
    idx = _row("aten.index_select.default", 1, [_t([5, 2]), 0, _t([3], "int64", min=0, max=4)])
    gen = _row("aten.bernoulli.default", 1, [_t([2]), _tag("opaque", "Generator")])
    make_job(run, "org/a", "torch_dispatch", {"dispatch_ops.jsonl": mm + add + gen})
    make_job(run, "org/b", "torch_dispatch", {"dispatch_ops.jsonl": mm + idx})
    out = tmp_path / "corpus"
    proc = kt("corpus", str(run), "-o", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "backendbench.parquet: 1 of 4 row(s) excluded from the benchmark" in proc.stdout
    assert f"files to {out}" in proc.stdout and (out / "backendbench.parquet").is_file()
    tests = benchmark_dict(out / PARQUET)
    assert sorted(tests) == ["aten.add.Tensor", "aten.index_select.default", "aten.mm.default"]
    rows = {r["op_name"]: r for r in pq.read_table(out / PARQUET).to_pylist()}
    assert (rows["aten.mm.default"]["count"], rows["aten.mm.default"]["in_models"]) == (
        6,
        ["org/a", "org/b"],
    )
    results = {}
    for op, arg_strings in tests.items():  # as the suite runs them, on CPU tensors
        (text,) = arg_strings
        args, kwargs = deserialize_args(text)
        real = [_real(a) for a in args]
        results[op] = tuple(resolve(op)(*real, **kwargs).shape)
    assert results == {
        "aten.mm.default": (2, 3),
        "aten.add.Tensor": (2, 3),
        "aten.index_select.default": (3, 2),
    }


def _real(value: Any) -> Any:
    """A CPU tensor for a ``T(...)``, zeros so that indices stay in bounds."""
    if not isinstance(value, Tensor):
        return value
    if value.stride is None:
        return torch.zeros(value.size, dtype=value.dtype)
    extent = 1 + sum((n - 1) * s for n, s in zip(value.size, value.stride, strict=True))
    return torch.zeros(extent, dtype=value.dtype).as_strided(value.size, value.stride)


# ---------------------------------------------------------------- hostile text (issue 38)

SENTINEL = "pwned"
TOUCH = f"__import__('os').system('touch {SENTINEL}')"
HOSTILE_STRINGS = [
    "'f16",  # deserialize_args unquotes 'f16' anywhere: an edit reaching past the literal
    "\"'f16",
    "'f16'",
    "f16",
    "b8",
    "'",
    '"',
    "\\",
    "\\'",
    "a\nb",
    "\r\t\x00\x7f",
    "é ü 中 \u2028 😀",
    TOUCH,
    f"'), {TOUCH}, ('",
    f'"), {TOUCH.replace(chr(39), chr(34))}, ("',
    f"' + str({TOUCH}) + '",
    ', __import__("os").system("touch pwned"))) #',  # after "'f16: ran on the old writer
    "T([1], f16)",
    "",
    " padded ",
]
HOSTILE_OPS = [
    f"aten.mm.default({TOUCH})",  # BackendBench runs eval(f"torch.ops.{op_name}")
    TOUCH,
    "aten.add.overloads",  # an attribute of the packet, not an overload
    "aten.__class__.__name__",
    "aten.no_such_op.default",
    "aten.mm",
    "aten.mm.default\nOperator: aten.add.Tensor",
    "custom_ns.my_op.default",  # a custom op whose library is not loaded here
]


@pytest.mark.parametrize("text", HOSTILE_STRINGS, ids=range(len(HOSTILE_STRINGS)))
def test_hostile_strings_round_trip_exactly_and_never_run(
    text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for after in HOSTILE_STRINGS:  # the string after it is what a broken quote would run
        inputs = [_t([2]), text, after, [text, {"k": after}]]
        kwargs = {text: after, "approximate": text}
        formatted, why = format_args(inputs, kwargs, REG)
        assert why == [] and reads_back(formatted, REG), formatted
        args, kw = deserialize_args(formatted)
        assert (list(args), kw) == (expected(inputs), expected(kwargs))
    assert not (tmp_path / SENTINEL).exists()


def test_reads_back_refuses_text_that_would_run() -> None:
    for text in (
        f"(({TOUCH},), {{}})",
        "((T([2], f16).sum(),), {})",
        "((torch.ops.aten.mm.default,), {})",
        "((torch.__class__,), {})",
        "((float('1e5'),), {})",
        "((x for x in ()),), {})",
        "(('f16',), {})",  # an abbreviation deserialize_args would unquote
        "(('a'f16'b',), {})",
    ):
        assert not reads_back(text, REG), text
    assert reads_back("((T([2], f16, stride=(2,)), -inf, float('nan'), torch.int4), {})", REG)


def test_hostile_run_dir_makes_a_file_backendbench_reads_as_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hostile op names and strings through the real corpus CLI into backendbench.parquet,
    back through BackendBench's reading (tests/corpus/bb_reader.py): values equal, nothing
    evaluated, op names that are no OpOverload of this torch excluded and not runnable."""
    run = tmp_path / "run"
    rows = [_row("aten.gelu.default", 1, [_t([2]), s], {"approximate": s}) for s in HOSTILE_STRINGS]
    rows += [_row(op, 1, [_t([2, 2]), _t([2, 2])]) for op in HOSTILE_OPS]
    rows.append(_row("aten.mm.default", 2, [_t([2, 2]), _t([2, 2], "float16", stride=[1, 2])]))
    rows.append(_row("aten.add.Tensor", 1, [_t([2]), _t([2], _TOUCHY_DTYPE)]))
    make_job(run, "org/a", "torch_dispatch", {"dispatch_ops.jsonl": "".join(rows)})
    out = tmp_path / "corpus"
    proc = kt("corpus", str(run), "-o", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    excluded = len(HOSTILE_OPS) + 1
    assert f"{excluded} of {len(rows)} row(s) excluded" in proc.stdout
    path = out / PARQUET
    table = {r["args"] + r["op_name"]: r for r in pq.read_table(path).to_pylist()}
    by_op = {r["op_name"]: r for r in table.values()}
    for op in HOSTILE_OPS:
        row = by_op[op]
        assert not row["runnable"] and not row["included_in_benchmark"], row
        assert any(op.split("\n")[0][:20] in w or "not a namespace" in w
                   for w in row["why_excluded"]), row["why_excluded"]  # fmt: skip
    assert "is not an op of torch" in " ".join(by_op["custom_ns.my_op.default"]["why_excluded"])
    monkeypatch.chdir(tmp_path)
    suite = benchmark_dict(path)
    assert sorted(suite) == ["aten.gelu.default", "aten.mm.default"]
    for op, arg_strings in suite.items():  # what the suite evaluates
        resolve(op)
        for text in arg_strings:
            deserialize_args(text)
    runnable = runnable_rows(path)  # what BackendBench's runtime filter evaluates
    assert len(runnable) == len(HOSTILE_STRINGS) + 1
    got = sorted(deserialize_args(text)[1]["approximate"] for op, text in runnable
                 if op == "aten.gelu.default")  # fmt: skip
    assert got == sorted(HOSTILE_STRINGS)
    for op, text in runnable:
        resolve(op)
        args, kw = deserialize_args(text)
        if op == "aten.gelu.default":
            assert args[1] == kw["approximate"]
    # The operator_inp log of the same corpus, read as BackendBench's .txt loader does
    # (op by op, each cnt line's text through deserialize_args): the same strings come back,
    # the op names and the dtype that cannot be written inertly are left out and said so.
    log = (out / "operator_inp.txt").read_text()
    ops = [line.removeprefix("Operator: ") for line in log.splitlines()
           if line.startswith("Operator: ")]  # fmt: skip
    assert set(ops) <= {"aten.gelu.default", "aten.mm.default", "aten.add.Tensor",
                        "aten.no_such_op.default", "aten.add.overloads",
                        "custom_ns.my_op.default", "aten.__class__.__name__"}  # fmt: skip
    strings = []
    for line in log.splitlines():
        if line.startswith("cnt: "):
            args, kw = deserialize_args(line.split(", ", 1)[1])
            strings += [kw["approximate"]] if "approximate" in kw else []
    assert sorted(strings) == sorted(HOSTILE_STRINGS)
    assert "left out" in proc.stderr + proc.stdout and "is not a plain name" in (
        proc.stderr + proc.stdout
    )
    assert not (tmp_path / SENTINEL).exists()


_TOUCHY_DTYPE = f"float16), {TOUCH}, (f16"
