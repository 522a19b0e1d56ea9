"""One line of torch_dispatch's ``dispatch_ops.jsonl``, checked before anyone uses it.

The corpus and coverage's cost estimates both read these lines from run dirs that may have
been copied or hand-edited, so a line is either a :class:`DispatchRow` every consumer can use
as it is, or a :class:`BadDispatchRow` with a kind to count it under; never a half-read row
(a merged signature without its module calls) or an exception from deep inside a writer.

The value form (tensors as ``{"shape", "dtype", "device", "stride"?, "min"?, "max"?,
"true"?}``, tagged scalars ``{"$": tag, "v": text}``, lists, JSON scalars) is
:mod:`kerneltracer.core.signature`'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, TypeGuard

import orjson

# Counts are summed over jobs and written as int64: 2^48 calls of one signature in one job
# is far beyond any trace (a day of 10^9 calls a second), and 2^15 jobs of them still fit.
MAX_COUNT = 2**48
# Kinds a bad line is counted under (docs/commands.md, "Bad input: counted, never silent").
KINDS = (
    "not_json",
    "not_an_object",
    "missing_field",
    "field_not_a_string",
    "count_not_a_count",
    "values_malformed",
    "modules_malformed",
)
_TAG = "$"
INT64_MAX = 2**63 - 1


class BadDispatchRow(Exception):
    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail


@dataclass(frozen=True, slots=True)
class DispatchRow:
    op: str
    phase: str
    count: int
    inputs: list[Any]
    kwargs: dict[str, Any]
    outputs: Any
    modules: dict[str, int]  # module path -> calls


def is_count(value: object, limit: int = MAX_COUNT) -> TypeGuard[int]:
    """A non-negative int (not a bool) no larger than ``limit``."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= limit


def parse_dispatch_line(line: bytes) -> DispatchRow:
    try:
        row = orjson.loads(line)
    except orjson.JSONDecodeError:
        raise BadDispatchRow("not_json", "not valid JSON") from None
    return dispatch_row(row)


def dispatch_row(row: Any) -> DispatchRow:
    """The checked row of a parsed JSON line, or :class:`BadDispatchRow`."""
    if not isinstance(row, dict):
        raise BadDispatchRow("not_an_object", "not a JSON object")
    try:
        op, phase, count, inputs, outputs = (
            row[k] for k in ("op", "phase", "count", "inputs", "outputs")
        )
    except KeyError as exc:
        raise BadDispatchRow("missing_field", f"missing field {exc.args[0]!r}") from None
    for name, text in (("op", op), ("phase", phase)):
        if not isinstance(text, str):
            raise BadDispatchRow("field_not_a_string", f"{name} is not a string: {text!r:.60}")
    if not is_count(count):
        raise BadDispatchRow(
            "count_not_a_count", f"count is not a non-negative integer up to 2^48: {count!r:.60}"
        )
    kwargs = row.get("kwargs") or {}
    if not isinstance(inputs, list) or not isinstance(kwargs, dict):
        raise BadDispatchRow("values_malformed", "inputs is not a list or kwargs not an object")
    for where, value in (("inputs", inputs), ("kwargs", kwargs), ("outputs", outputs)):
        why = _value_problem(value)
        if why:
            raise BadDispatchRow("values_malformed", f"{where}: {why}")
    modules = row.get("modules") or {}
    if not isinstance(modules, dict) or not all(is_count(n) for n in modules.values()):
        raise BadDispatchRow(
            "modules_malformed", f"modules is not an object of call counts: {modules!r:.60}"
        )
    return DispatchRow(op, phase, count, inputs, kwargs, outputs, modules)


def _value_problem(value: Any) -> str | None:
    """Why ``value`` is not of the signature value form (None: it is)."""
    if isinstance(value, list):
        return next((w for w in map(_value_problem, value) if w), None)
    if not isinstance(value, dict):
        if isinstance(value, float) and not math.isfinite(value):
            return "a non-finite float outside a tag"
        return None  # str, int, float, bool, None: JSON gives nothing else
    if _TAG in value:
        if not isinstance(value[_TAG], str) or not isinstance(value.get("v"), str):
            return f"a tagged value whose tag or text is not a string: {value!r:.60}"
        return None
    if "shape" in value and "dtype" in value:
        return _tensor_problem(value)
    return next((w for w in map(_value_problem, value.values()) if w), None)


def _tensor_problem(t: dict[str, Any]) -> str | None:
    shape, stride = t["shape"], t.get("stride")
    if not isinstance(shape, list) or not all(_is_size(s) for s in shape):
        return f"a tensor shape that is not a list of sizes: {shape!r:.60}"
    if math.prod(s for s in shape if isinstance(s, int)) > INT64_MAX:
        return f"a tensor of more than 2^63 elements: {shape!r:.60}"  # torch's numel is int64
    if stride is not None and (
        not isinstance(stride, list)
        or len(stride) != len(shape)
        or not all(_is_size(s) for s in stride)
    ):
        return f"a tensor stride that is not one size per dimension: {stride!r:.60}"
    if not isinstance(t["dtype"], str) or not isinstance(t.get("device", ""), str):
        return "a tensor dtype or device that is not a string"
    bounds = [t[k] for k in ("min", "max") if k in t]
    if len(bounds) not in (0, 2) or not all(_is_number(b) for b in bounds):
        return "a tensor range that is not a min and a max number"
    if "true" in t and not is_count(t["true"], INT64_MAX):
        return "a tensor true count that is not a count"
    return None


def _is_size(s: Any) -> bool:
    # An int (2^62 at most: sizes and strides are int64 in torch) or a symbolic size ("s0").
    return isinstance(s, str) or is_count(s, 2**62)


def _is_number(v: Any) -> bool:
    if isinstance(v, bool):
        return False
    return isinstance(v, int) or (isinstance(v, float) and math.isfinite(v))
