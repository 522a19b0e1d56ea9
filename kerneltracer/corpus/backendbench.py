"""The corpus in BackendBench's TorchBench-suite Parquet layout (``backendbench.parquet``), so
``python -m BackendBench.scripts.main --suite torchbench --alternative-torchbench-data-path
backendbench.parquet`` runs our models' op inputs.

The contract, from meta-pytorch/BackendBench (BackendBench is not on PyPI; read at the
commits named here):

- Reader: ``BackendBench/data_loaders.py`` (6e00b3d2) picks the Parquet loader by the
  ``.parquet`` suffix and hands every row to the suite as a dict (``pq.read_table`` then
  pandas ``to_dict("records")``); ``op_list_to_benchmark_dict`` keeps the rows whose
  ``included_in_benchmark`` is true and groups their ``args`` by ``op_name``;
  ``BackendBench/suite/torchbench.py`` (0f3f721d) resolves ``op_name`` with
  ``torch.ops.<op_name>`` and, with ``--check-overhead-dominated-ops``, keeps only rows with
  ``is_overhead_dominated_op``. A ``.txt`` operator_inp log goes another path that needs a
  model mapping BackendBench builds itself, so the Parquet file is what a user can hand it.
- ``args``: ``BackendBench/utils.py`` ``deserialize_args`` evaluates the string with
  ``eval`` and the names ``T`` (``_deserialize_tensor(size, dtype, stride=None,
  device="cuda")``), ``torch``, ``th``, ``inf`` and the dtype abbreviations of
  ``dtype_abbrs`` (``bf16 f64 f32 f16 c32 c64 c128 i8 i16 i32 i64 b8 u8``), after stripping
  quotes at both ends and unquoting ``'f16'``-style abbreviations. The format is PyTorch's
  operator_inp one (``benchmarks/dynamo/microbenchmarks/operator_inp_utils.py``): a device is
  its type as a quoted string (``'cuda'``), a tensor ``T([shape], f16[, stride=(..)])``.
- Columns: the dataset card (``Torchbench.md``; GPUMODE/backendbench_tests ``README.md``)
  and ``BackendBench/scripts/parquet_trace_converter.py`` (03e53f8c) with
  ``scripts/dataset_filters.py``, which build the file with ``pa.Table.from_pylist`` (hence
  the inferred Arrow types of :func:`arrow_schema`):

  ======================================  ==============================================
  ``uuid`` string                         sha256 hex of ``args`` + ``op_name`` (UTF-8)
  ``op_name`` string                      ``aten.addmm.default``
  ``args`` string                         ``((args), {kwargs})`` in the syntax above
  ``count`` int64                         calls of this (op, args) in the traced models
  ``is_synthetic`` bool                   ``count == 0`` (generated, not traced)
  ``in_models`` list<string>              the models that made the call
  ``in_models_count`` int64               ``len(in_models)``
  ``included_in_benchmark`` bool          the suite runs only these rows
  ``why_excluded`` list<string>           reasons, empty when included
  ``runtime_ms`` double                   GPU time BackendBench measured; NaN when fresh
  ``relative_runtime_to_kernel_launch``   ``runtime_ms`` over an empty kernel's; NaN
  double
  ``runnable`` bool                       the args can be built and the op run
  ``is_overhead_dominated_op`` bool       launch-bound canary; False when fresh
  ======================================  ==============================================

Columns we cannot know take the values BackendBench's converter gives a fresh trace before
its GPU filters run (included, runnable, no reasons, NaN runtimes, not overhead-dominated).
A signature whose args BackendBench cannot rebuild (an opaque object, a symbolic size, a
name that is not a plain identifier) is kept but excluded and not runnable, with the reason
in ``why_excluded``, as BackendBench's own filters do. What the syntax cannot say is left
out: integer ranges (``T`` takes no min/max) and a device index (``cuda:1`` → ``'cuda'``);
signatures that become one (op, args) this way are merged (counts summed, models united).

BackendBench evaluates ``op_name`` and ``args`` (``eval``), so nothing from a run dir may
become code there, and what it reads back must be exactly what was recorded:

- ``op_name`` must be an OpOverload of the registry of the torch installed here (looked up
  in a child process, :mod:`kerneltracer.worker.oplookup`; the analysis side imports no
  torch); any other name (a custom op whose library is not loaded, text that is not
  ``namespace.op.overload``) makes the row excluded and not runnable, with the reason;
- names written unquoted are ``T``, ``inf``, ``float``, the abbreviations, and
  ``torch.<name>`` only where that name is a dtype / layout / memory format of that torch;
- strings are quoted so that ``deserialize_args``' text edits cannot touch them: a plain
  string (letters, digits, ``_ .:/+-``) is single-quoted as PyTorch writes it, any other
  (quotes, backslashes, newlines, non-ASCII, one spelled like an abbreviation, which it
  would unquote into a dtype) is double-quoted with every quote and special character
  escaped (``\x27``), so the text holds no ``'`` but the plain strings' own;
- each ``args`` is checked as BackendBench reads it: its text edits change nothing, and the
  expression has only literals, ``T(...)`` calls and the names above (:func:`reads_back`).
  A row that fails is excluded and not runnable, and its ``args`` is a plain string
  literal, never the failing text.
"""

from __future__ import annotations

import ast
import hashlib
import math
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from kerneltracer.core.signature import TAG, is_tensor
from kerneltracer.corpus.model import SINGLE, Placement, Signature
from kerneltracer.corpus.operator_inp import OP_NAME, contiguous_stride
from kerneltracer.corpus.operator_inp import quote as _string
from kerneltracer.jsonio import atomic_writer

if TYPE_CHECKING:
    import pyarrow as pa

PARQUET = "backendbench.parquet"

# BackendBench/utils.py dtype_abbrs: the names its eval knows besides ``torch``.
ABBREVIATIONS = {
    "bfloat16": "bf16",
    "float64": "f64",
    "float32": "f32",
    "float16": "f16",
    "complex32": "c32",
    "complex64": "c64",
    "complex128": "c128",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "bool": "b8",
    "uint8": "u8",
}
_NON_FINITE = {"nan": "float('nan')", "inf": "inf", "-inf": "-inf"}
_TORCH_TAGS = ("dtype", "layout", "memory_format")
_LOOKUP_TIMEOUT_S = 300.0  # importing torch on a loaded machine


# ---------------------------------------------------------------- torch's registry


@dataclass(frozen=True)
class TorchRegistry:
    """What the torch BackendBench will evaluate the file with has, of the names we write."""

    version: str
    ops: frozenset[str]  # of the op names asked, the OpOverloads
    names: Mapping[str, frozenset[str]]  # "dtype" / "layout" / "memory_format" -> names
    error: str = ""  # why nothing could be looked up (then nothing is known)

    @classmethod
    def of_lookup(cls, reply: dict[str, Any]) -> TorchRegistry:
        """From :func:`kerneltracer.worker.oplookup.lookup`'s reply."""
        names = {kind: frozenset(map(str, found)) for kind, found in reply["names"].items()}
        return cls(str(reply["torch"]), frozenset(map(str, reply["ops"])), names)

    def op_problem(self, op: str) -> str | None:
        """Why ``op`` cannot be BackendBench's ``torch.ops.<op_name>`` (None: it can)."""
        if not OP_NAME.fullmatch(op):
            return f"op_name {op!r:.80} is not a namespace.op.overload name"
        if self.error:
            return f"op_name not checked against torch's op registry ({self.error})"
        if op not in self.ops:
            return f"{op} is not an op of torch {self.version} (a custom op's library not loaded?)"
        return None


def torch_registry(ops: Iterable[str], python: str = sys.executable) -> TorchRegistry:
    """Look ``ops`` and torch's dtype / layout / memory format names up in a child process of
    ``python`` (the torch BackendBench runs with); a failure is a registry with its error."""
    asked = sorted({op for op in ops if OP_NAME.fullmatch(op)})
    argv = [python, "-m", "kerneltracer.worker.oplookup"]
    try:
        done = subprocess.run(
            argv, input=orjson.dumps({"ops": asked}), capture_output=True,
            timeout=_LOOKUP_TIMEOUT_S, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return _unknown(f"no answer from torch within {_LOOKUP_TIMEOUT_S:g} s")
    except OSError as exc:
        return _unknown(f"cannot start {python}: {exc.strerror or exc}")
    try:
        return TorchRegistry.of_lookup(orjson.loads(done.stdout))
    except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
        lines = done.stderr.decode(errors="replace").strip().splitlines()
        return _unknown(f"the lookup failed: {lines[-1] if lines else done.returncode}"[:200])


def _unknown(error: str) -> TorchRegistry:
    return TorchRegistry("", frozenset(), {}, error)


def arrow_schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema(
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
            # Ours, after BackendBench's columns (it reads rows as dicts and ignores it): the
            # parallel layouts in_models ran in ("tp8", "tp8.pp2"; "single": one device).
            ("in_layouts", pa.list_(pa.string())),
        ]
    )


# ---------------------------------------------------------------- args


class _Args:
    """Formats one call in BackendBench's dialect, noting why it cannot be rebuilt."""

    def __init__(self, registry: TorchRegistry) -> None:
        self.registry = registry
        self.why: list[str] = []

    def call(self, args: list[Any], kwargs: dict[str, Any]) -> str:
        text = ", ".join(self.value(a) for a in args)
        if len(args) == 1:
            text += ","
        kw = ", ".join(f"{_string(str(k))}: {self.value(v)}" for k, v in kwargs.items())
        return f"(({text}), {{{kw}}})"

    def value(self, value: Any) -> str:
        if is_tensor(value):
            return self.tensor(value)
        if isinstance(value, dict) and TAG in value:
            return self.tagged(str(value[TAG]), str(value.get("v")))
        if isinstance(value, dict):
            items = (f"{_string(str(k))}: {self.value(v)}" for k, v in value.items())
            return "{" + ", ".join(items) + "}"
        if isinstance(value, list):
            return "[" + ", ".join(self.value(v) for v in value) + "]"
        if isinstance(value, float) and not math.isfinite(value):
            return _NON_FINITE[repr(value)]
        if value is None or isinstance(value, bool | int | float):
            return repr(value)
        if isinstance(value, str):
            return _string(value)
        return self.unusable(f"a {type(value).__name__} value", _string(str(value)))

    def tensor(self, t: dict[str, Any]) -> str:
        dims = [self.size(s) for s in t["shape"]]
        parts = ["[" + ", ".join(dims) + "]", self.dtype(str(t["dtype"]))]
        stride = t.get("stride")
        # BackendBench allocates 1 + sum((size - 1) * stride) elements: below one for some
        # empty tensors, whose strides move no data anyway.
        sized = all(isinstance(s, int) and s > 0 for s in t["shape"])
        if stride is not None and sized and list(stride) != contiguous_stride(t["shape"]):
            strides = [self.size(s) for s in stride]
            trail = "," if len(strides) == 1 else ""  # a 1-tuple
            parts.append("stride=(" + ", ".join(strides) + trail + ")")
        return "T(" + ", ".join(parts) + ")"

    def size(self, s: Any) -> str:
        if isinstance(s, int) and not isinstance(s, bool):
            return str(s)
        return self.unusable(f"the symbolic size {s!r}", _string(str(s)))

    def dtype(self, name: str) -> str:
        if name in ABBREVIATIONS:
            return ABBREVIATIONS[name]
        return self.torch_name("dtype", name)

    def tagged(self, tag: str, text: str) -> str:
        if tag in _TORCH_TAGS:
            return self.torch_name(tag, text)
        if tag == "device":
            return _string(text.split(":", 1)[0])  # PyTorch's logs keep the device type only
        if tag == "float" and text in _NON_FINITE:
            return _NON_FINITE[text]
        return self.unusable(f"the {tag} value <{text}>", _string(f"<{text}>"))

    def torch_name(self, what: str, name: str) -> str:
        if name in self.registry.names.get(what, ()):
            return f"torch.{name}"
        return self.unusable(f"the {what} {name!r}", _string(name))

    def unusable(self, what: str, placeholder: str) -> str:
        self.why.append(f"{what} cannot be rebuilt by BackendBench's args syntax")
        return placeholder


def _as_read(text: str) -> str:
    """``args`` after BackendBench's ``deserialize_args`` text edits, as its ``eval`` sees it."""
    text = text.strip().strip("'")
    for abbr in ABBREVIATIONS.values():
        text = text.replace(f"'{abbr}'", abbr)
    return text.strip().strip("'").strip('"')


_NAMES = frozenset({"T", "inf", "float", *ABBREVIATIONS.values()})
_NODES = (ast.Expression, ast.Tuple, ast.List, ast.Dict, ast.Constant, ast.Load, ast.keyword)


def reads_back(text: str, registry: TorchRegistry) -> bool:
    """Whether BackendBench reads ``text`` as written: its edits change nothing and the
    expression is literals, ``T(...)``, ``float('nan')``, ``inf`` / ``-x``, the dtype
    abbreviations and ``torch.<a name of the registry>``; nothing else can run."""
    if _as_read(text) != text:
        return False
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    torch_names = frozenset().union(*registry.names.values())
    return all(_allowed(node, torch_names) for node in ast.walk(tree))


def _allowed(node: ast.AST, torch_names: frozenset[str]) -> bool:
    if isinstance(node, _NODES):
        return not isinstance(node, ast.keyword) or node.arg == "stride"
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, ast.USub)
    if isinstance(node, ast.USub):
        return True
    if isinstance(node, ast.Name):
        return node.id in _NAMES or node.id == "torch"
    if isinstance(node, ast.Attribute):
        value = node.value
        return isinstance(value, ast.Name) and value.id == "torch" and node.attr in torch_names
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name) and func.id == "float":
            (arg,) = node.args if len(node.args) == 1 else (None,)
            return isinstance(arg, ast.Constant) and arg.value == "nan" and not node.keywords
        return isinstance(func, ast.Name) and func.id == "T"
    return False


def format_args(
    args: list[Any], kwargs: dict[str, Any], registry: TorchRegistry
) -> tuple[str, list[str]]:
    """A call as BackendBench's ``args`` string, and why it cannot be rebuilt (empty if it can)."""
    writer = _Args(registry)
    text = writer.call(args, kwargs)
    if not reads_back(text, registry):  # a writer bug: never hand BackendBench such text
        writer.why.append("args would not be read back as written by BackendBench")
        # Inside a tuple: a bare string literal would lose its quotes to the final strip.
        text = f"(({_string(text)},), {{}})"
    return text, list(dict.fromkeys(writer.why))


# ---------------------------------------------------------------- rows


@dataclass
class Row:
    """One (op, args) row of the BackendBench file."""

    op_name: str
    args: str
    count: int = 0
    models: set[str] = field(default_factory=set)
    why_excluded: list[str] = field(default_factory=list)
    layouts: set[str] = field(default_factory=set)

    @property
    def uuid(self) -> str:
        return hashlib.sha256(self.args.encode() + self.op_name.encode()).hexdigest()


def rows_of(
    sigs: Iterable[Signature],
    registry: TorchRegistry,
    placements: Mapping[str, Placement] | None = None,
) -> list[Row]:
    """One row per distinct (op, args) string, most called first within an op;
    ``placements``: the layouts of parallel jobs' rank labels (others: one device)."""
    placements = placements or {}
    rows: dict[tuple[str, str], Row] = {}
    for sig in sigs:
        args, why = format_args(sig.inputs, sig.kwargs, registry)
        op_problem = registry.op_problem(sig.op)
        why = [op_problem, *why] if op_problem else why
        row = rows.setdefault((sig.op, args), Row(sig.op, args))
        row.count += sig.calls
        row.models.update(sig.model_calls)
        row.layouts.update(
            placements[m].layout if m in placements else SINGLE for m in sig.model_calls
        )
        row.why_excluded += [w for w in why if w not in row.why_excluded]
    return sorted(rows.values(), key=lambda r: (r.op_name, -r.count, r.args))


def to_table(rows: list[Row]) -> pa.Table:
    import pyarrow as pa

    nan = float("nan")
    models = [sorted(r.models) for r in rows]
    cols: list[list[Any]] = [
        [r.uuid for r in rows],
        [r.op_name for r in rows],
        [r.args for r in rows],
        [r.count for r in rows],
        [r.count == 0 for r in rows],
        models,
        [len(m) for m in models],
        [not r.why_excluded for r in rows],
        [r.why_excluded for r in rows],
        [nan] * len(rows),
        [nan] * len(rows),
        [not r.why_excluded for r in rows],
        [False] * len(rows),
        [sorted(r.layouts) for r in rows],
    ]
    schema = arrow_schema()
    arrays = [pa.array(c, f.type) for c, f in zip(cols, schema, strict=True)]
    return pa.Table.from_arrays(arrays, schema=schema)


@dataclass(frozen=True)
class Export:
    path: Path
    rows: int
    excluded: int  # rows left out of the benchmark
    reasons: Counter[str]  # why_excluded entry -> rows


def write_backendbench(
    sigs: Iterable[Signature],
    out_dir: Path,
    registry: TorchRegistry | None = None,
    placements: Mapping[str, Placement] | None = None,
) -> Export:
    """Write ``backendbench.parquet`` into ``out_dir`` atomically; ``registry``: what the
    torch that will read it has (default: :func:`torch_registry` of this interpreter);
    ``placements``: the corpus's parallel rank labels, for ``in_layouts``."""
    import pyarrow.parquet as pq

    sigs = list(sigs)
    if registry is None:
        registry = torch_registry(s.op for s in sigs)
    rows = rows_of(sigs, registry, placements)
    path = Path(out_dir) / PARQUET
    with atomic_writer(path) as fh:
        pq.write_table(to_table(rows), fh)
    reasons = Counter(w for r in rows for w in r.why_excluded)
    return Export(path, len(rows), sum(1 for r in rows if r.why_excluded), reasons)
