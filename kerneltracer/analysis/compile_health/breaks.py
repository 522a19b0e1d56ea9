"""Graph-break and recompile reasons as Dynamo writes them, reduced to stable keys.

A graph break's text (the ``dynamo_graph_break_reason`` artifact) names the user frame
(``Graph break in user code at FILE:LINE``), the break type, and, since torch 2.7, a link
to the graph-break site whose last part is the break's registry id (``gb0059`` →
``GB0059``, ``torch/_dynamo/graph_break_registry.json``). The id is the key that dedups one
cause across models; a break without one (an older torch, a restart reason) is keyed by its
type's text, or by the registry id whose type has that exact text.
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import orjson

_GB_URL = re.compile(r"/gb/gb(\d{4})\.html", re.IGNORECASE)
_SITE_URL = re.compile(r"https?://\S+?/gb/gb\d{4}\.html", re.IGNORECASE)
_GB_ID = re.compile(r"\bGB(\d{4})\b")
_USER_AT = re.compile(r"Graph break in user code at (.+?):(\d+)\s*$", re.MULTILINE)
_TB_FRAME = re.compile(r'^\s*File "(.+?)", line (\d+), in (.+)$')
# Break-type lines that only say where Dynamo was when the break surfaced.
_PREAMBLES = ("Encountered graph break when attempting to trace", "Graph Break Reason:")
# Dynamo's wrapper around a break it could not resume from (it then skips the whole
# function): the break's real type follows it.
_SKIP_WRAPPER = "Failed to handle graph break gracefully"
_WRAPPER_TAIL = "Graph break encountered:"
_RESUME_PREFIX = "torch_dynamo_resume_in_"
_MAX_TEXT = 300


@dataclass(frozen=True, slots=True)
class BreakReason:
    key: str  # "GB0059", else "type:<the break type>"
    gb_id: str | None
    gb_type: str
    frame: str | None  # "file:line" of the user's code
    code: str | None  # that line's source, when the log carries it
    explanation: str | None = None  # Dynamo's "Explanation:" (torch >= 2.7)
    hints: tuple[str, ...] = ()  # its "Hint:" lines
    url: str | None = None  # the graph-break site's page for the registry id
    # Dynamo could not resume after it and ran the whole function eagerly.
    skipped_function: bool = False


def parse_break(text: str) -> BreakReason:
    """A ``dynamo_graph_break_reason`` payload (or a restart reason) as a :class:`BreakReason`."""
    gb_type = _break_type(text)
    gb_id = _gb_id(text) or _registry_id(gb_type)
    frame, code = _user_frame(text)
    explanation, hints = explanation_and_hints(text)
    url = _SITE_URL.search(text)
    return BreakReason(
        _key(gb_id, gb_type),
        gb_id,
        gb_type,
        frame,
        code,
        explanation,
        hints,
        url.group(0) if url else None,
        _SKIP_WRAPPER in text,
    )


def explanation_and_hints(text: str | None) -> tuple[str | None, tuple[str, ...]]:
    """Dynamo's ``Explanation:`` and ``Hint:`` paragraphs of a break or failure text; a
    paragraph goes on over the lines indented under it."""
    explanation: list[str] = []
    hints: list[list[str]] = []
    current: list[str] | None = None
    for raw in (text or "").splitlines():
        line = raw.strip()
        if line.startswith("Explanation:") and not explanation:
            current = explanation
            current.append(line.removeprefix("Explanation:").strip())
        elif line.startswith("Hint:"):
            hints.append([line.removeprefix("Hint:").strip()])
            current = hints[-1]
        elif current is not None and line and raw.startswith("    "):
            current.append(line)
        else:
            current = None
    joined = " ".join(x for x in explanation if x)
    return joined or None, tuple(" ".join(h) for h in hints if any(h))


def _key(gb_id: str | None, gb_type: str) -> str:
    return gb_id if gb_id else f"type:{gb_type}"


def _gb_id(text: str) -> str | None:
    m = _GB_URL.search(text) or _GB_ID.search(text)
    return f"GB{m.group(1)}" if m else None


def _break_type(text: str) -> str:
    """The break's type: the first line that is not where-it-happened boilerplate."""
    for raw in text.splitlines():
        line = raw.strip().strip("'\"")
        if not line or line.startswith("Graph break in user code at"):
            continue
        if line.startswith("Graph Break Reason:"):
            line = line.removeprefix("Graph Break Reason:").strip()
        if line.startswith(_SKIP_WRAPPER):
            # The real type is the first line after "Graph break encountered:".
            line = line.partition(_WRAPPER_TAIL)[2].strip()
        if not line or line.startswith(_PREAMBLES) or line.startswith("Explanation:"):
            continue
        return line.rstrip(":")[:_MAX_TEXT]
    return text.strip()[:_MAX_TEXT] or "(no reason given)"


def _user_frame(text: str) -> tuple[str | None, str | None]:
    """Where in the user's code it broke, and that line's code (from the traceback's end)."""
    m = _USER_AT.search(text)
    frame = f"{m.group(1)}:{m.group(2)}" if m else None
    code = None
    lines = text.splitlines()
    for i, line in enumerate(lines):
        tb = _TB_FRAME.match(line)
        if tb and (frame is None or f"{tb.group(1)}:{tb.group(2)}" == frame):
            nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
            code = nxt or None
            if frame is None and not _is_torch_file(tb.group(1)):
                frame = f"{tb.group(1)}:{tb.group(2)}"
    return frame, code


def _is_torch_file(path: str) -> bool:
    norm = path.replace("\\", "/")
    return "/torch/" in norm or norm.startswith("torch/")


def function_frame(co_filename: object, co_firstlineno: object, co_name: object) -> str | None:
    """``file:line`` of a compiled function (the frame a restart reason belongs to)."""
    if not isinstance(co_filename, str) or not co_filename:
        return None
    line = co_firstlineno if isinstance(co_firstlineno, int) else 0
    return f"{co_filename}:{line}"


def user_function(co_name: object) -> str | None:
    """The user's function a Dynamo resume function continues (``forward`` of
    ``torch_dynamo_resume_in_forward_at_10``)."""
    if not isinstance(co_name, str):
        return None
    if co_name.startswith(_RESUME_PREFIX):
        return co_name.removeprefix(_RESUME_PREFIX).rsplit("_at_", 1)[0]
    return co_name


def resume_line(co_name: object) -> int | None:
    """The line a Dynamo resume function continues from (``10`` of
    ``torch_dynamo_resume_in_forward_at_10``, maybe with a ``_1`` uniquifier): the line of
    the graph break that split the function."""
    if not isinstance(co_name, str) or not co_name.startswith(_RESUME_PREFIX):
        return None
    m = _RESUME_AT.search(co_name)
    return int(m.group(1)) if m else None


_RESUME_AT = re.compile(r"_at_(\d+)(?:_\d+)?$")


def recompile_reason_lines(payload: str | None) -> list[str]:
    """A ``recompile_reasons`` artifact: a JSON list of strings, or plain text with one
    entry per cache entry that failed (``0/0: tensor 'x' size mismatch …``), each maybe
    followed by its user stack on the next lines."""
    if not payload:
        return []
    try:
        value = orjson.loads(payload)
    except orjson.JSONDecodeError:
        value = None
    if isinstance(value, list):
        return [str(v).strip() for v in value if str(v).strip()]
    if isinstance(value, str):
        return [value.strip()] if value.strip() else []
    entries: list[list[str]] = []
    for line in payload.splitlines():
        if not line.strip():
            continue
        if _GUARD_ID.match(line) or not entries:
            entries.append([line.strip()])
        else:
            entries[-1].append(line.rstrip())
    return ["\n".join(e) for e in entries]


_GUARD_ID = re.compile(r"^\s*\[?\d+/\d+(?:_\d+)?\]?:\s*")
_NUMBERS = re.compile(r"\b\d+\b")


def recompile_key(reason: str) -> str:
    """A recompile reason without the compile id it names and its numbers: ``tensor 'x'
    size mismatch at index 0. expected 2, actual 3`` and ``… expected 4, actual 8`` are one
    reason (a batch-size change on dim 0)."""
    text = _GUARD_ID.sub("", reason.strip().splitlines()[0] if reason.strip() else "")
    return _NUMBERS.sub("N", text)[:_MAX_TEXT]


@cache
def _registry() -> dict[str, str]:
    """gb_type text → registry id, from the installed torch's graph_break_registry.json
    (found without importing torch; empty when there is none)."""
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return {}
    if spec is None or not spec.submodule_search_locations:
        return {}
    for root in spec.submodule_search_locations:
        path = Path(root) / "_dynamo" / "graph_break_registry.json"
        try:
            data = orjson.loads(path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            continue
        out: dict[str, str] = {}
        if isinstance(data, dict):
            for gb_id, entries in data.items():
                for entry in entries if isinstance(entries, list) else []:
                    gb_type = entry.get("Gb_type") if isinstance(entry, dict) else None
                    if isinstance(gb_type, str):
                        out.setdefault(gb_type.strip(), str(gb_id))
        return out
    return {}


def _registry_id(gb_type: str) -> str | None:
    return _registry().get(gb_type.strip())
