"""The operator_inp text format: op input logs that benchmark scripts read, written and
parsed without ``eval``.

A log is a sequence of blocks::

    Operator: aten.addmm.default
    cnt: 12, ((T([768], f16), T([2, 768], f16), T([768, 768], f16, stride=(1, 768))), {})
    cnt: 1, ((T([1, 16], i64, min=0, max=511),), {'dim': -1})

Each ``cnt`` line is one signature: its call count, then the positional arguments as a
tuple and the keyword arguments as a dict. Values: ``T(shape, dtype[, stride=(..)]
[, min=a, max=b][, true=n])`` tensors (stride only when not contiguous; min/max for integer
tensors; true, the count of true values, for bool tensors),
``[..]`` lists, ints, floats (``repr`` text, and ``nan`` / ``inf`` / ``-inf``), strings,
``None`` / ``True`` / ``False``, ``torch.float16`` dtypes (also layouts and memory
formats), ``device('cpu')`` and ``<Name>`` for opaque objects. The writer is canonical, so
parsing a log it wrote and writing it again gives the same bytes.

Benchmark scripts (PyTorch's ``operator_inp_utils``, BackendBench's ``deserialize_args``) read
these logs with ``eval`` after text edits of their own, and a log may be built from a damaged
or hostile run dir, so the writer writes only inert literals of this grammar and refuses
(:class:`Unwritable`) anything else: an op name that is not ``namespace.op.overload``, a
dtype, layout, memory format or opaque name that is not a plain identifier, a stride, range
or count that is not an integer. Strings are quoted as BackendBench reads them back: a plain
one (letters, digits, ``_ .:/+-``, not a dtype abbreviation) in single quotes as PyTorch
writes it, any other in double quotes with every quote, backslash and non-printable or
non-ASCII character escaped (``\x27``), so no text edit can reach into it.

The parser is a small recursive-descent reader of exactly this grammar; a line it cannot
read is counted under its kind (``malformed``) and skipped, never evaluated.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kerneltracer.core.signature import TAG, is_tensor

_ABBREV = {
    "float16": "f16",
    "bfloat16": "bf16",
    "float32": "f32",
    "float64": "f64",
    "int64": "i64",
    "int32": "i32",
    "int16": "i16",
    "int8": "i8",
    "uint8": "u8",
    "bool": "b8",
    "complex64": "c64",
    "complex128": "c128",
}
_DTYPE_OF = {v: k for k, v in _ABBREV.items()}
# Every abbreviation a reader unquotes (BackendBench's dtype_abbrs has c32 besides ours): a
# string spelt like one is double-quoted, so that no reader turns it into a dtype.
_READER_ABBREVIATIONS = frozenset({*_ABBREV.values(), "c32"})
OP_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OPAQUE = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_PLAIN = re.compile(r"[A-Za-z0-9_ .:/+-]*")
_TORCH_TAGS = ("dtype", "layout", "memory_format")
LOG_NAME = "operator_inp.txt"  # the corpus's log of every signature
_OPERATOR = "Operator: "
COUNT = "cnt: "


@dataclass(frozen=True)
class Entry:
    count: int
    args: list[Any]
    kwargs: dict[str, Any]


@dataclass
class OperatorLog:
    blocks: list[tuple[str, list[Entry]]] = field(default_factory=list)
    malformed: Counter[str] = field(default_factory=Counter)  # kind -> lines skipped
    first_errors: list[str] = field(default_factory=list)  # "line N: why", a few

    @property
    def entries(self) -> int:
        return sum(len(e) for _, e in self.blocks)


# ---------------------------------------------------------------- writer


class Unwritable(ValueError):
    """A value (or op name) the log cannot hold as an inert literal of its grammar."""


def _check_op_name(op: str) -> str:
    if not OP_NAME.fullmatch(op):
        raise Unwritable(f"op name {op!r:.80} is not namespace.op.overload")
    return op


def quote(text: str) -> str:
    """A string literal that ``eval`` gives back as it is, also after the text edits of
    BackendBench's reader (it unquotes ``'f16'`` anywhere and strips quotes at both ends)."""
    if _PLAIN.fullmatch(text) and text not in _READER_ABBREVIATIONS:
        return f"'{text}'"
    return '"' + "".join(map(_escaped, text)) + '"'


def _escaped(c: str) -> str:
    if c.isascii() and c.isprintable() and c not in "\\\"'":
        return c
    o = ord(c)
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}"


def _name(what: str, text: str, pattern: re.Pattern[str] = _NAME) -> str:
    if not pattern.fullmatch(text):
        raise Unwritable(f"{what} {text!r:.80} is not a plain name")
    return text


def _integer(what: str, value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise Unwritable(f"{what} {value!r:.80} is not an integer")


def contiguous_stride(shape: list[int]) -> list[int]:
    stride, acc = [], 1
    for size in reversed(shape):
        stride.append(acc)
        acc *= max(int(size), 1)
    return stride[::-1]


def _format_value(value: Any) -> str:
    if is_tensor(value):
        return _format_tensor(value)
    if isinstance(value, dict) and TAG in value:
        return _format_tagged(value[TAG], str(value.get("v")))
    if isinstance(value, dict):
        return (
            "{" + ", ".join(f"{quote(str(k))}: {_format_value(v)}" for k, v in value.items()) + "}"
        )
    if isinstance(value, list):
        return "[" + ", ".join(_format_value(v) for v in value) + "]"
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return quote(value)
    return f"<{_name('opaque type', type(value).__name__, _OPAQUE)}>"


def _format_tensor(t: dict[str, Any]) -> str:
    shape = t["shape"]
    if not isinstance(shape, list):
        raise Unwritable(f"tensor shape {shape!r:.80} is not a list")
    dtype = str(t["dtype"])
    parts = [_format_value(shape), _ABBREV.get(dtype) or _name("dtype", dtype)]
    stride = t.get("stride")
    sized = all(isinstance(s, int) and not isinstance(s, bool) for s in shape)
    if stride is not None and not isinstance(stride, list):
        raise Unwritable(f"tensor stride {stride!r:.80} is not a list")
    if stride is not None and sized and list(stride) != contiguous_stride(shape):
        trail = "," if len(stride) == 1 else ""  # a 1-tuple, as Python writes it
        strides = ", ".join(_integer("stride", s) for s in stride)
        parts.append("stride=(" + strides + trail + ")")
    if "min" in t:
        parts += [f"min={_integer('min', t['min'])}", f"max={_integer('max', t.get('max'))}"]
    if "true" in t:
        parts.append(f"true={_integer('true count', t['true'])}")
    return "T(" + ", ".join(parts) + ")"


def _format_tagged(tag: str, text: str) -> str:
    if tag in _TORCH_TAGS:
        return f"torch.{_name(str(tag), text)}"
    if tag == "device":
        return f"device({quote(text)})"
    if tag == "float":
        if text not in ("nan", "inf", "-inf"):
            raise Unwritable(f"float {text!r:.80} is not nan, inf or -inf")
        return text
    return f"<{_name('opaque value', text, _OPAQUE)}>"


def format_call(args: list[Any], kwargs: dict[str, Any]) -> str:
    """``((args), {kwargs})``: the part of a ``cnt`` line after the count."""
    text = ", ".join(_format_value(a) for a in args)
    if len(args) == 1:
        text += ","
    kw = ", ".join(f"{quote(str(k))}: {_format_value(v)}" for k, v in kwargs.items())
    return f"(({text}), {{{kw}}})"


def inert_calls(
    ops_and_calls: Iterable[tuple[str, str, list[Any], dict[str, Any]]],
) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """(key, op, args, kwargs) -> ({key: the call's text}, [(key, why not)]) for the calls a
    log can hold and those it cannot (checked once, so a writer never meets them)."""
    texts: dict[str, str] = {}
    refused: list[tuple[str, str]] = []
    for key, op, args, kwargs in ops_and_calls:
        try:
            _check_op_name(op)
            texts[key] = format_call(args, kwargs)
        except Unwritable as exc:
            refused.append((key, str(exc)))
    return texts, refused


def format_entry(entry: Entry) -> str:
    return f"{COUNT}{entry.count}, {format_call(entry.args, entry.kwargs)}"


def format_log(blocks: list[tuple[str, list[Entry]]]) -> str:
    return format_lines([(op, [format_entry(e) for e in entries]) for op, entries in blocks])


def format_lines(blocks: list[tuple[str, list[str]]]) -> str:
    """A log from already formatted ``cnt`` lines (a corpus formats each call once)."""
    lines = []
    for op, entries in blocks:
        lines.append(_OPERATOR + _check_op_name(op))
        lines.extend(entries)
    return "".join(line + "\n" for line in lines)


# ---------------------------------------------------------------- parser


class ParseError(ValueError):
    pass


_MAX_ERRORS = 20


def parse_log(text: str) -> OperatorLog:
    """Read a log; malformed lines are counted by kind and skipped."""
    log = OperatorLog()
    current: list[Entry] | None = None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        kind, why = "", ""
        if line.startswith(_OPERATOR):
            op = line[len(_OPERATOR) :].strip()
            if op and " " not in op:
                current = []
                log.blocks.append((op, current))
                continue
            kind, why, current = "operator", "empty or spaced operator name", None
        elif line.startswith(COUNT):
            if current is None:
                kind, why = "orphan_count", "cnt line outside an Operator block"
            else:
                try:
                    current.append(parse_entry(line))
                    continue
                except ParseError as exc:
                    kind, why = "entry", str(exc)
        else:
            kind, why = "unknown_line", "neither 'Operator:' nor 'cnt:'"
        log.malformed[kind] += 1
        if len(log.first_errors) < _MAX_ERRORS:
            log.first_errors.append(f"line {n}: {kind}: {why}")
    return log


def parse_entry(line: str) -> Entry:
    if not line.startswith(COUNT):
        raise ParseError("does not start with 'cnt: '")
    p = _Parser(line, len(COUNT))
    count = p.integer()
    p.expect(", ")
    p.expect("(")
    args = p.sequence("(", ")") if p.peek("(") else p.fail("expected the argument tuple")
    p.expect(", ")
    if not p.peek("{"):
        p.fail("expected the keyword argument dict")
    kwargs = p.mapping()
    p.expect(")")
    if p.pos != len(line):
        p.fail("trailing text")
    return Entry(count, args, kwargs)


class _Parser:
    def __init__(self, text: str, pos: int = 0) -> None:
        self.text = text
        self.pos = pos

    def fail(self, why: str) -> Any:
        raise ParseError(f"column {self.pos + 1}: {why}")

    def peek(self, token: str) -> bool:
        return self.text.startswith(token, self.pos)

    def expect(self, token: str) -> None:
        if not self.peek(token):
            self.fail(f"expected {token!r}")
        self.pos += len(token)

    def integer(self) -> int:
        start = self.pos
        if self.peek("-"):
            self.pos += 1
        while self.pos < len(self.text) and self.text[self.pos].isdigit():
            self.pos += 1
        if self.pos == start or self.text[start : self.pos] == "-":
            self.fail("expected an integer")
        return int(self.text[start : self.pos])

    def value(self) -> Any:
        c = self.text[self.pos : self.pos + 1]
        if c == "(":
            return self.sequence("(", ")")
        if c == "[":
            return self.sequence("[", "]")
        if c == "{":
            return self.mapping()
        if c in "'\"":
            return self.string()
        if c == "<":
            end = self.text.find(">", self.pos)
            if end < 0:
                self.fail("unclosed '<'")
            name, self.pos = self.text[self.pos + 1 : end], end + 1
            return {TAG: "opaque", "v": name}
        if self.peek("T("):
            return self.tensor()
        if self.peek("device("):
            self.pos += len("device(")
            name = self.string()
            self.expect(")")
            return {TAG: "device", "v": name}
        if self.peek("torch."):
            self.pos += len("torch.")
            name = self.word()
            return {TAG: _torch_tag(name), "v": name}
        return self.atom()

    def word(self) -> str:
        start = self.pos
        while self.pos < len(self.text) and (
            self.text[self.pos].isalnum() or self.text[self.pos] == "_"
        ):
            self.pos += 1
        if self.pos == start:
            self.fail("expected a name")
        return self.text[start : self.pos]

    def atom(self) -> Any:
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] not in ",)]}: ":
            self.pos += 1
        token = self.text[start : self.pos]
        if token in _CONSTANTS:
            return _CONSTANTS[token]
        if token in ("nan", "inf", "-inf"):
            return {TAG: "float", "v": token}
        if _is_int(token):
            return int(token)
        try:
            number = float(token)
        except ValueError:
            self.pos = start
            return self.fail(f"unknown value {token!r}")
        if not any(ch in token for ch in ".eE") or token.lower() in (
            "nan",
            "inf",
            "-inf",
            "infinity",
        ):
            self.pos = start
            self.fail(f"not a canonical float {token!r}")
        return number

    def sequence(self, open_: str, close: str) -> list[Any]:
        self.expect(open_)
        items: list[Any] = []
        while not self.peek(close):
            items.append(self.value())
            if self.peek(", "):
                self.pos += 2
            elif self.peek(","):
                self.pos += 1
            elif not self.peek(close):
                self.fail(f"expected ',' or {close!r}")
        self.pos += len(close)
        return items

    def mapping(self) -> dict[str, Any]:
        self.expect("{")
        out: dict[str, Any] = {}
        while not self.peek("}"):
            key = self.string()
            self.expect(": ")
            out[key] = self.value()
            if self.peek(", "):
                self.pos += 2
            elif not self.peek("}"):
                self.fail("expected ', ' or '}'")
        self.pos += 1
        return out

    def string(self) -> str:
        end = self.text[self.pos : self.pos + 1]
        if end not in ("'", '"'):
            self.fail("expected a string")
        self.pos += 1
        out: list[str] = []
        while True:
            if self.pos >= len(self.text):
                self.fail("unterminated string")
            c = self.text[self.pos]
            if c == end:
                self.pos += 1
                return "".join(out)
            if c == "\\":
                out.append(self.escape())
                continue
            out.append(c)
            self.pos += 1

    def escape(self) -> str:
        nxt = self.text[self.pos + 1 : self.pos + 2]
        if nxt in _ESCAPES:
            self.pos += 2
            return _ESCAPES[nxt]
        digits = _HEX_DIGITS.get(nxt)
        code = self.text[self.pos + 2 : self.pos + 2 + digits] if digits else ""
        if not digits or len(code) != digits or not all(c in _HEX for c in code):
            self.fail(f"unknown escape \\{nxt}")
        self.pos += 2 + len(code)
        try:
            return chr(int(code, 16))
        except ValueError:  # past U+10FFFF
            return self.fail(f"escape \\{nxt}{code} is not a character")

    def tensor(self) -> dict[str, Any]:
        self.expect("T(")
        shape = self.sequence("[", "]")
        self.expect(", ")
        abbrev = self.word()
        t: dict[str, Any] = {"shape": shape, "dtype": _DTYPE_OF.get(abbrev, abbrev)}
        while self.peek(", "):
            self.pos += 2
            key = self.word()
            self.expect("=")
            if key == "stride":
                t["stride"] = self.sequence("(", ")")
            elif key in ("min", "max", "true"):
                t[key] = self.integer()
            else:
                self.fail(f"unknown tensor field {key!r}")
        self.expect(")")
        if ("min" in t) != ("max" in t):
            self.fail("min without max or max without min")
        return t


_CONSTANTS: dict[str, Any] = {"None": None, "True": True, "False": False}
_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "n": "\n", "r": "\r"}
_HEX_DIGITS = {"x": 2, "u": 4, "U": 8}
_HEX = frozenset("0123456789abcdefABCDEF")


def _is_int(token: str) -> bool:
    body = token[1:] if token.startswith("-") else token
    return body.isdigit()


def _torch_tag(name: str) -> str:
    if name.endswith("_format") or name.startswith("channels_last"):
        return "memory_format"
    if name == "strided" or name.startswith("sparse_") or name in ("jagged", "_mkldnn"):
        return "layout"
    return "dtype"
