"""The report page's figures as inline SVG, drawn on the server (no script, no CDN, no build step).

Each figure is an ``<svg role="img">`` with a ``<title>`` and a ``<desc>`` (its accessible name and what it shows in
words) and is followed on the page by a table of the same numbers, so nothing is said by the drawing alone. Colours
meet WCAG 2.1 contrast on white: text 4.5:1 or more, marks 3:1 or more (``tests/service/http/test_report_browser.py``
checks both).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

__all__ = ["INK", "MARK", "MARK_2", "bar_chart", "e_process_chart", "line_chart"]

INK = "#1a1a1a"  # text
MARK = "#1f4e79"  # first series (8.9:1 on white)
MARK_2 = "#a4400b"  # second series (6.0:1 on white)
BAND = "#9db8d2"  # a spread band, behind the marks (decorative: the table beside it gives its bounds)
_WIDTH, _HEIGHT, _LEFT, _BOTTOM, _TOP, _RIGHT = 520, 240, 48, 36, 36, 16


def _frame(figure_id: str, title: str, description: str, body: list[str], x_label: str, y_label: str) -> str:
    t, d = f"{figure_id}-title", f"{figure_id}-desc"
    plot_bottom = _HEIGHT - _BOTTOM
    axes = [
        f'<line x1="{_LEFT}" y1="{_TOP}" x2="{_LEFT}" y2="{plot_bottom}" stroke="{INK}" stroke-width="1"/>',
        f'<line x1="{_LEFT}" y1="{plot_bottom}" x2="{_WIDTH - _RIGHT}" y2="{plot_bottom}" stroke="{INK}" '
        'stroke-width="1"/>',
        f'<text x="{(_LEFT + _WIDTH - _RIGHT) / 2}" y="{_HEIGHT - 4}" text-anchor="middle" fill="{INK}" '
        f'font-size="12">{html.escape(x_label)}</text>',
        f'<text x="12" y="{(_TOP + plot_bottom) / 2}" text-anchor="middle" fill="{INK}" font-size="12" '
        f'transform="rotate(-90 12 {(_TOP + plot_bottom) / 2})">{html.escape(y_label)}</text>',
    ]
    return (
        f'<svg role="img" aria-labelledby="{t} {d}" viewBox="0 0 {_WIDTH} {_HEIGHT}" width="{_WIDTH}" '
        f'height="{_HEIGHT}" xmlns="http://www.w3.org/2000/svg"><title id="{t}">{html.escape(title)}</title>'
        f'<desc id="{d}">{html.escape(description)}</desc>' + "".join(axes + body) + "</svg>"
    )


def _x(index: int, count: int) -> float:
    span = _WIDTH - _LEFT - _RIGHT
    return _LEFT + span * (index + 0.5) / max(count, 1)


def _y(value: float, top: float) -> float:
    plot = _HEIGHT - _BOTTOM - _TOP
    return _HEIGHT - _BOTTOM - plot * (value / top if top > 0 else 0.0)


def _tick(x: float, text: str) -> str:
    return (
        f'<text x="{x:.1f}" y="{_HEIGHT - _BOTTOM + 14}" text-anchor="middle" fill="{INK}" font-size="11">'
        f"{html.escape(text)}</text>"
    )


def _y_ticks(top: float, fmt: str) -> list[str]:
    return [
        f'<text x="{_LEFT - 4}" y="{_y(v, top) + 4:.1f}" text-anchor="end" fill="{INK}" font-size="11">'
        f"{format(v, fmt)}</text>"
        for v in (0.0, top / 2, top)
    ]


def bar_chart(
    figure_id: str, title: str, description: str, labels: Sequence[str], values: Sequence[float], *, x_label: str,
    y_label: str,
) -> str:  # fmt: skip
    """Vertical bars of ``values`` (>= 0) over ``labels``."""
    top = max(max(values, default=0.0), 1e-12)
    width = (_WIDTH - _LEFT - _RIGHT) / max(len(values), 1) * 0.6
    body = _y_ticks(top, ".0f" if top >= 10 else ".2f")
    for i, (label, value) in enumerate(zip(labels, values, strict=True)):
        x = _x(i, len(values))
        body.append(
            f'<rect x="{x - width / 2:.1f}" y="{_y(value, top):.1f}" width="{width:.1f}" '
            f'height="{_HEIGHT - _BOTTOM - _y(value, top):.1f}" fill="{MARK}"/>'
        )
        body.append(_tick(x, label))
    return _frame(figure_id, title, description, body, x_label, y_label)


def line_chart(
    figure_id: str,
    title: str,
    description: str,
    x_values: Sequence[str],
    series: Sequence[tuple[str, Sequence[float | None]]],
    *,
    x_label: str,
    y_label: str,
    band: tuple[Sequence[float], Sequence[float]] | None = None,
    top: float = 1.0,
) -> str:
    """Lines (one per named series, missing values skipped) over evenly spaced ``x_values``, on 0..top; ``band``
    (low, high) shades a spread behind the first series. A legend above the plot names the series."""
    count = len(x_values)
    body = _y_ticks(top, ".2f")
    if band is not None:
        upper = [f"{_x(i, count):.1f},{_y(v, top):.1f}" for i, v in enumerate(band[1])]
        lower = [f"{_x(i, count):.1f},{_y(v, top):.1f}" for i, v in reversed(list(enumerate(band[0])))]
        body.append(f'<polygon points="{" ".join(upper + lower)}" fill="{BAND}" fill-opacity="0.5"/>')
    for number, (name, values) in enumerate(series):
        colour = MARK if number == 0 else MARK_2
        points = [(i, v) for i, v in enumerate(values) if v is not None]
        path = " ".join(f"{_x(i, count):.1f},{_y(v, top):.1f}" for i, v in points)
        dash = "" if number == 0 else ' stroke-dasharray="6 3"'
        body.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>')
        body += [f'<circle cx="{_x(i, count):.1f}" cy="{_y(v, top):.1f}" r="3" fill="{colour}"/>' for i, v in points]
        body.append(
            f'<text x="{_LEFT + 8 + 200 * number}" y="14" text-anchor="start" fill="{colour}" '
            f'font-size="12">{"—" if number == 0 else "- -"} {html.escape(name)}</text>'
        )
    body += [_tick(_x(i, count), x) for i, x in enumerate(x_values)]
    return _frame(figure_id, title, description, body, x_label, y_label)


def _decade(value: float) -> float:
    """log10(1 + value) for a statistic value >= 0 (the e-process chart's scale)."""
    return math.log1p(max(value, 0.0)) / math.log(10.0)


def e_process_chart(
    figure_id: str,
    title: str,
    description: str,
    labels: Sequence[int],
    values: Sequence[float],
    *,
    threshold: float,
    alarm: tuple[int, float] | None = None,
) -> str:
    """A monitor's statistic R (>= 0) against the labels counted, on a log scale: log10(1 + R), drawn from the
    origin (R = 0 before any label) through one dot per point; the alarm threshold as a dashed line and the alarm,
    ``(labels, R)`` when it rose, as a diamond."""
    right = max([1, *labels, *([alarm[0]] if alarm else [])])
    limit = _decade(threshold)
    marked = [*values, *([alarm[1]] if alarm else [])]
    highest = max(1, math.ceil(max([limit, *(_decade(v) for v in marked)]) * 1.05))
    stride = math.ceil(highest / 5)  # at most 6 ticks, whole decades, the last at the top
    top = float(stride * math.ceil(highest / stride))
    span = _WIDTH - _LEFT - _RIGHT

    def x(label: float) -> float:
        return _LEFT + span * label / right

    body = [
        f'<text x="{_LEFT - 4}" y="{_y(k, top) + 4:.1f}" text-anchor="end" fill="{INK}" font-size="11">{k}</text>'
        for k in range(0, int(top) + 1, stride)
    ]
    body += [_tick(x(v), str(v)) for v in sorted({0, right // 2, right})]
    body.append(
        f'<line x1="{_LEFT}" y1="{_y(limit, top):.1f}" x2="{_WIDTH - _RIGHT}" y2="{_y(limit, top):.1f}" '
        f'stroke="{MARK_2}" stroke-width="1.5" stroke-dasharray="6 3"/>'
    )
    body.append(
        f'<text x="{_WIDTH - _RIGHT}" y="{_y(limit, top) - 4:.1f}" text-anchor="end" fill="{MARK_2}" font-size="11">'
        f"alarm threshold {threshold:,.0f}</text>"
    )
    dots = [(x(n), _y(_decade(v), top)) for n, v in zip(labels, values, strict=True)]
    path = " ".join(f"{px:.1f},{py:.1f}" for px, py in [(x(0), _y(0.0, top)), *dots])
    body.append(f'<polyline points="{path}" fill="none" stroke="{MARK}" stroke-width="2"/>')
    body += [f'<circle cx="{px:.1f}" cy="{py:.1f}" r="2.5" fill="{MARK}"/>' for px, py in dots]
    body.append(
        f'<text x="{_LEFT + 8}" y="14" text-anchor="start" fill="{MARK}" font-size="12">— e-value (cell)</text>'
    )
    if alarm is not None:
        ax, ay = x(alarm[0]), _y(_decade(alarm[1]), top)
        diamond = f"{ax:.1f},{ay - 6:.1f} {ax + 6:.1f},{ay:.1f} {ax:.1f},{ay + 6:.1f} {ax - 6:.1f},{ay:.1f}"
        body.append(f'<polygon points="{diamond}" fill="{MARK_2}" data-alarm="{alarm[0]}"/>')
        body.append(
            f'<text x="{_LEFT + 208}" y="14" text-anchor="start" fill="{MARK_2}" font-size="12">'
            f"◆ alarm at label {alarm[0]}</text>"
        )
    return _frame(figure_id, title, description, body, "labels counted", "log10(1 + e-value)")
