"""A small, fast Python syntax highlighter for generated inductor code.

Pygments manages about 0.5 MB/s here, which would dominate a render; generated code
needs only keywords, strings, comments, numbers, decorators and def/class names. One
compiled regex finds those tokens; the text between them is escaped in bulk. Every piece
of the input is HTML-escaped exactly once, so untrusted code cannot inject markup.
"""

from __future__ import annotations

import html
import keyword
import re

_KEYWORDS = "|".join(sorted(keyword.kwlist, key=len, reverse=True))
_TOKEN = re.compile(
    r"(?P<c>#[^\n]*)"
    r"|(?P<s>[rRbBuUfF]{0,2}(?:'''[\s\S]*?'''|\"\"\"[\s\S]*?\"\"\"|'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"))"
    r"|(?P<d>(?<=\bdef )\w+|(?<=\bclass )\w+)"
    r"|(?P<k>\b(?:" + _KEYWORDS + r")\b)"
    r"|(?P<m>\b(?:0[xX][0-9a-fA-F_]+|\d[\d_]*(?:\.\d*)?(?:[eE][+-]?\d+)?)\b)"
    r"|(?P<a>^[ \t]*@[\w.]+)"
    # Any other identifier, consumed whole and left plain: otherwise the engine retries every
    # alternative at each of its characters, which is most of the text (twice the time).
    r"|(?P<w>[^\W\d]\w*)",
    re.MULTILINE,
)
_OPEN = {
    kind: f'<span class="{css}">'
    for kind, css in {"c": "c", "s": "s", "d": "nf", "k": "k", "m": "m", "a": "nd"}.items()
}


def highlight_python(code: str) -> str:
    """Return ``code`` as escaped HTML with ``<span class=...>`` around tokens."""
    esc = html.escape
    parts: list[str] = []
    pos = 0
    for m in _TOKEN.finditer(code):
        kind = m.lastgroup or "k"
        if kind == "w":
            continue
        start, end = m.span()
        if start > pos:
            parts.append(esc(code[pos:start], quote=False))
        parts += (_OPEN[kind], esc(m.group(), quote=False), "</span>")
        pos = end
    parts.append(esc(code[pos:], quote=False))
    return "".join(parts)


CSS = (
    ".hl .c{color:#6a737d;font-style:italic}.hl .s{color:#032f62}"
    ".hl .k{color:#d73a49;font-weight:bold}"
    ".hl .m{color:#005cc5}.hl .nf{color:#6f42c1;font-weight:bold}.hl .nd{color:#e36209}"
)
