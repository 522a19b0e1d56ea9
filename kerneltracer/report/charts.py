"""Charts as inline SVG, written by the report itself.

Why inline SVG and not a chart library: the report must open from disk with no network and
stay small. A vendored library would be 100-300 KB per page (the CSP forbids loading a
shared file as a script from ``file://`` in some browsers) while a chart here is a few KB of
text the browser draws natively, prints, scales and searches; hover text is SVG
``<title>``. Every chart is sized by its ``viewBox`` and scales to its container, so none
widens the page. Labels are untrusted text (op and model names): all of it is escaped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

from markupsafe import Markup

_WIDTH = 640
_PALETTE = ("#1e88e5", "#fb8c00", "#43a047", "#8e24aa", "#e53935", "#00897b", "#6d4c41", "#757575")
_BAR_H = 16
_LABEL_W = 262


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    title: str = ""  # hover text; the label and formatted value when empty


def _svg(
    height: float, body: list[str], label: str, width: int = _WIDTH, attrs: str = ""
) -> Markup:
    css = "chart zoomable" if attrs else "chart"
    return Markup(
        f'<svg class="{css}"{attrs} viewBox="0 0 {width} {height:.0f}" width="{width}" '
        f'role="img" aria-label="{escape(label)}" xmlns="http://www.w3.org/2000/svg">'
        f"<title>{escape(label)}</title>{''.join(body)}</svg>"
    )


def _clip(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[: chars - 1] + "…"


def bar_chart(bars: Sequence[Bar], label: str, fmt: Callable[[float], str]) -> Markup:
    """Horizontal bars, largest first as given; one row per bar with its value printed."""
    if not bars:
        return Markup("")
    top = max((b.value for b in bars), default=0.0) or 1.0
    span = _WIDTH - _LABEL_W - 90
    body = []
    for i, b in enumerate(bars):
        y = i * (_BAR_H + 4)
        w = max(span * b.value / top, 1.0 if b.value > 0 else 0.0)
        hover = b.title or f"{b.label}: {fmt(b.value)}"
        body.append(
            f'<g><title>{escape(hover)}</title><text x="{_LABEL_W - 6}" y="{y + 12}" '
            f'text-anchor="end" class="lbl">{escape(_clip(b.label, 38))}</text>'
            f'<rect x="{_LABEL_W}" y="{y + 1}" width="{w:.1f}" height="{_BAR_H - 2}" '
            f'fill="{_PALETTE[0]}"/><text x="{_LABEL_W + w + 4:.1f}" y="{y + 12}" class="val">'
            f"{escape(fmt(b.value))}</text></g>"
        )
    return _svg(len(bars) * (_BAR_H + 4) + 4, body, label)


def histogram(
    values: Sequence[float], label: str, fmt: Callable[[float], str], bins: int = 20
) -> Markup:
    """A distribution: ``bins`` equal-width bins between the smallest and largest value,
    each bar's hover text its range and count."""
    vals = [v for v in values if v is not None and math.isfinite(v)]
    if not vals:
        return Markup("")
    lo, hi = min(vals), max(vals)
    bins = 1 if hi <= lo else min(bins, max(len(set(vals)), 1))
    step = (hi - lo) / bins if bins > 1 else 1.0
    counts = [0] * bins
    for v in vals:
        counts[min(int((v - lo) / step), bins - 1) if bins > 1 else 0] += 1
    plot_h, left, bottom = 120, 40, 22
    bw = (_WIDTH - left - 10) / bins
    most = max(counts)
    body = [
        f'<line x1="{left}" y1="{plot_h}" x2="{_WIDTH - 10}" y2="{plot_h}" class="axis"/>',
        f'<text x="{left - 4}" y="12" text-anchor="end" class="val">{most}</text>',
        f'<text x="{left}" y="{plot_h + 16}" class="val">{escape(fmt(lo))}</text>',
        f'<text x="{_WIDTH - 10}" y="{plot_h + 16}" text-anchor="end" class="val">'
        f"{escape(fmt(hi))}</text>",
    ]
    for i, n in enumerate(counts):
        if not n:
            continue
        h = max(plot_h * n / most, 1.0)
        a, b = lo + i * step, lo + (i + 1) * step
        body.append(
            f'<rect x="{left + i * bw + 1:.1f}" y="{plot_h - h:.1f}" width="{max(bw - 2, 1):.1f}" '
            f'height="{h:.1f}" fill="{_PALETTE[0]}"><title>{n} job{"s" if n != 1 else ""}: '
            f"{escape(fmt(a))} – {escape(fmt(b))}</title></rect>"
        )
    return _svg(plot_h + bottom, body, label)


def stacked_bars(
    rows: Sequence[tuple[str, dict[str, float]]],
    segments: Sequence[str],
    label: str,
    fmt: Callable[[float], str],
) -> Markup:
    """One horizontal bar per row, split into ``segments`` (same colour per segment name),
    with a legend; the total printed after each bar."""
    if not rows:
        return Markup("")
    totals = [sum(max(v, 0.0) for v in parts.values()) for _, parts in rows]
    top = max(totals) or 1.0
    span = _WIDTH - _LABEL_W - 90
    colour = {s: _PALETTE[i % len(_PALETTE)] for i, s in enumerate(segments)}
    body = []
    x = _LABEL_W
    for s in segments:  # legend
        body.append(
            f'<rect x="{x}" y="2" width="10" height="10" fill="{colour[s]}"/>'
            f'<text x="{x + 14}" y="11" class="val">{escape(s)}</text>'
        )
        x += 24 + 7 * len(s)
    for i, ((name, parts), total) in enumerate(zip(rows, totals, strict=True)):
        y = 20 + i * (_BAR_H + 4)
        body.append(
            f'<text x="{_LABEL_W - 6}" y="{y + 12}" text-anchor="end" class="lbl">'
            f"<title>{escape(name)}</title>{escape(_clip(name, 38))}</text>"
        )
        x0 = float(_LABEL_W)
        for s in segments:
            v = max(parts.get(s, 0.0), 0.0)
            if v <= 0:
                continue
            w = span * v / top
            body.append(
                f'<rect x="{x0:.1f}" y="{y + 1}" width="{max(w, 0.5):.1f}" height="{_BAR_H - 2}" '
                f'fill="{colour[s]}"><title>{escape(name)} · {escape(s)}: {escape(fmt(v))}'
                "</title></rect>"
            )
            x0 += w
        body.append(f'<text x="{x0 + 4:.1f}" y="{y + 12}" class="val">{escape(fmt(total))}</text>')
    return _svg(20 + len(rows) * (_BAR_H + 4) + 4, body, label)


def heatmap(
    rows: Sequence[str],
    columns: Sequence[tuple[str, str]],
    value: Callable[[str, str], float | None],
    label: str,
    fmt: Callable[[float], str],
) -> Markup:
    """Rows × columns cells shaded by log(value); ``columns`` are (key, header) pairs.
    Empty cells (no value) stay blank, so "not run" and "run once" differ at a glance."""
    if not rows or not columns:
        return Markup("")
    cell = max(min(24, (_WIDTH - _LABEL_W) // len(columns)), 6)
    head = 110
    cells = {(r, c): value(r, c) for r in rows for c, _ in columns}
    found = [v for v in cells.values() if v is not None and v > 0]
    top = math.log1p(max(found)) if found else 1.0
    body = []
    for j, (_, header) in enumerate(columns):
        x = _LABEL_W + j * cell + cell / 2 + 4
        body.append(
            f'<text transform="translate({x:.1f},{head - 4}) rotate(-60)" class="val">'
            f"<title>{escape(header)}</title>{escape(_clip(header, 24))}</text>"
        )
    for i, r in enumerate(rows):
        y = head + i * cell
        body.append(
            f'<text x="{_LABEL_W - 6}" y="{y + cell * 0.7:.1f}" text-anchor="end" class="lbl">'
            f"<title>{escape(r)}</title>{escape(_clip(r, 38))}</text>"
        )
        for j, (key, header) in enumerate(columns):
            v = cells[(r, key)]
            if v is None:
                continue
            shade = 0.15 + 0.85 * (math.log1p(v) / top if top else 1.0)
            body.append(
                f'<rect x="{_LABEL_W + j * cell}" y="{y}" width="{cell - 1}" height="{cell - 1}" '
                f'fill="{_PALETTE[0]}" fill-opacity="{shade:.2f}"><title>{escape(r)} · '
                f"{escape(header)}: {escape(fmt(v))}</title></rect>"
            )
    width = max(_WIDTH, _LABEL_W + len(columns) * cell + 10)
    return _svg(head + len(rows) * cell + 4, body, label, width=width)


@dataclass(frozen=True)
class Span:
    track: str
    start: float  # seconds from the view's origin
    end: float
    label: str
    css: str = ""  # a class the stylesheet colours (a status)
    title: str = ""


_TRACK_H = 18
_LABELLED_SPANS = 300


def track_view(
    spans: Sequence[Span],
    label: str,
    fmt: Callable[[float], str],
    unit: str = "s",
    width: int = _WIDTH,
) -> Markup:
    """Spans on horizontal tracks over time, zoomable in the browser (wheel zooms around the
    pointer, drag pans, double-click resets): each span carries its start and end, and the
    report's script re-places them for the visible range, so text never stretches."""
    if not spans:
        return Markup("")
    tracks = list(dict.fromkeys(s.track for s in spans))
    t0 = min(s.start for s in spans)
    t1 = max(max(s.end for s in spans), t0 + 1e-6)
    left, top = 90, 16
    span_w = width - left - 10
    body = [
        f'<text x="{left}" y="11" class="val" data-axis="start">{escape(fmt(t0))}</text>'
        f'<text x="{width - 10}" y="11" text-anchor="end" class="val" data-axis="end">'
        f"{escape(fmt(t1))}</text>"
    ]
    for i, t in enumerate(tracks):
        body.append(
            f'<text x="{left - 6}" y="{top + i * (_TRACK_H + 2) + 13}" text-anchor="end" '
            f'class="lbl">{escape(_clip(t, 13))}</text>'
        )
    row = {t: i for i, t in enumerate(tracks)}
    # Beyond a few hundred spans, text in the bars is unreadable until zoomed and costs
    # most of the chart's bytes: the hover text still names each span.
    labelled = len(spans) <= _LABELLED_SPANS
    for s in spans:
        x = left + span_w * (s.start - t0) / (t1 - t0)
        w = max(span_w * (s.end - s.start) / (t1 - t0), 1.0)
        y = top + row[s.track] * (_TRACK_H + 2)
        hover = s.title or f"{s.label}: {fmt(s.end - s.start)}"
        text = (
            f'<text x="{x + 3:.0f}" y="{y + 13}" class="in">{escape(_clip(s.label, 60))}</text>'
            if labelled
            else ""
        )
        body.append(
            f'<g class="span {escape(s.css)}" data-s="{s.start:.6g}" data-e="{s.end:.6g}">'
            f'<title>{escape(hover)}</title><rect x="{x:.0f}" y="{y}" width="{w:.1f}" '
            f'height="{_TRACK_H}"/>{text}</g>'
        )
    height = top + len(tracks) * (_TRACK_H + 2) + 4
    # The script reads the plot's extent from these attributes.
    extent = (
        f' data-t0="{t0:.6f}" data-t1="{t1:.6f}" data-left="{left}" data-right="{width - 10}"'
        f' data-unit="{escape(unit)}"'
    )
    return _svg(height, body, label, width=width, attrs=extent)
