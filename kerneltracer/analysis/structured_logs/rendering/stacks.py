"""Stack tries: the dynamo_start stacks of all compiles merged by common prefix, as HTML."""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape
from typing import Any

_CONVERT_FRAME_SUFFIXES = (
    (("catch_errors", "_convert_frame", "_convert_frame_assert")),
    (("__call__", "__call__", "__call__")),
)


@dataclass
class _Node:
    terminals: list[tuple[str, str]] = field(default_factory=list)  # (display id, css status)
    children: dict[tuple[str, int, str], _Node] = field(default_factory=dict)


def frame_key(frame: dict[str, Any], strings: list[str | None]) -> tuple[str, int, str]:
    fn = frame.get("filename")
    if isinstance(fn, int) and 0 <= fn < len(strings):
        filename = strings[fn] or "(unknown)"
    elif isinstance(fn, str):
        filename = fn
    else:
        filename = "(unknown)"
    if "#link-tree/" in filename:
        filename = filename.split("#link-tree/", 1)[1]
    line = frame.get("line")
    return (filename, line if isinstance(line, int) else 0, str(frame.get("name", "")))


def trim_dynamo_frames(frames: list[tuple[str, int, str]]) -> list[tuple[str, int, str]]:
    """Drop the convert_frame wrapper frames at the bottom of every dynamo stack."""
    for names in _CONVERT_FRAME_SUFFIXES:
        tail = frames[-len(names) :]
        if len(tail) == len(names) and all(
            f[0].endswith("torch/_dynamo/convert_frame.py") and f[2] == n
            for f, n in zip(tail, names, strict=True)
        ):
            frames = frames[: -len(names)]
    return frames


class StackTrie:
    def __init__(self) -> None:
        self.root = _Node()

    def insert(
        self, frames: list[tuple[str, int, str]], display: str | None, status: str = "status-ok"
    ) -> None:
        node = self.root
        for f in frames:
            node = node.children.setdefault(f, _Node())
        if display is not None:
            node.terminals.append((display, status))

    def is_empty(self) -> bool:
        return not self.root.children

    def html(self, caption: str = "Stack", open_: bool = True) -> str:
        parts = [
            f"<details{' open' if open_ else ''}><summary>{escape(caption)}</summary>"
            "<div class='stack-trie'><ul>"
        ]
        self._fmt(self.root, parts)
        parts.append("</ul></div></details>")
        return "".join(parts)

    def _fmt(self, node: _Node, parts: list[str]) -> None:
        for (filename, line, name), child in node.children.items():
            stars = "".join(
                f"<a href='#{escape(d)}' class='{s}'>{escape(d)}</a> " for d, s in child.terminals
            )
            label = f"{escape(filename)}:{line} in {escape(name)}"
            if len(node.children) > 1:
                parts.append(f"<li>{stars}{label}<ul>")
                self._fmt(child, parts)
                parts.append("</ul></li>")
            else:
                parts.append(f"<li>{stars}{label}</li>")
                self._fmt(child, parts)
