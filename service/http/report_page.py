"""A judge's report as one HTML page: the JSON's figures (``service.wire.reports.JudgeReport``) as tables and inline
SVG, rendered on the server, with no script and no asset from elsewhere.

Every number shown is in an element with ``data-figure="<path>"``, the path of the same number in the JSON answer
(``cards.0.skill.weighted_kappa.estimate``), so a test can read the page and compare each figure with the JSON
(``tests/service/http/test_report_browser.py`` does, in a real browser). Every value placed in the page is escaped
by ``html.escape``.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from calibration.report_card.card import ModeEvidence, Planner, ReportCard
from calibration.unit_bootstrap import UnitInterval
from service.http.report_svg import INK, MARK, bar_chart, e_process_chart, line_chart
from service.wire.monitoring import MonitorCell
from service.wire.reports import JudgeReport

__all__ = ["report_page"]

_STYLE = f"""
body {{ font-family: system-ui, sans-serif; color: {INK}; background: #ffffff; max-width: 72rem; margin: 0 auto;
  padding: 1rem 1.5rem; line-height: 1.45; }}
h1 {{ font-size: 1.6rem; }} h2 {{ font-size: 1.3rem; border-bottom: 2px solid {MARK}; margin-top: 2rem; }}
h3 {{ font-size: 1.1rem; margin-top: 1.5rem; }}
table {{ border-collapse: collapse; margin: 0.5rem 0 1rem; }}
caption {{ text-align: left; font-weight: 600; padding-bottom: 0.25rem; }}
th, td {{ border: 1px solid #767676; padding: 0.2rem 0.5rem; text-align: right; }}
th[scope=row] {{ text-align: left; }}
.verdict {{ font-weight: 600; }}
.note {{ color: #4a4a4a; }}
figure {{ margin: 0.5rem 0; }}
"""


def _num(value: float | None, path: str, digits: int = 3) -> str:
    shown = "n/a" if value is None else f"{value:.{digits}f}"
    return f'<span data-figure="{html.escape(path)}">{shown}</span>'


def _count(value: int | None, path: str) -> str:
    shown = "n/a" if value is None else str(value)
    return f'<span data-figure="{html.escape(path)}">{shown}</span>'


def _interval(value: UnitInterval | None, path: str) -> str:
    if value is None:
        return "undefined"
    low, high = _num(value.low, path + ".low"), _num(value.high, path + ".high")
    return f"{_num(value.estimate, path + '.estimate')} [{low}, {high}]"


def _skill(card: ReportCard, at: str) -> str:
    s, b, c = card.skill, card.baseline, card.ceiling
    level = f"{card.interval_level:.0%}"
    head = (
        f"<table><caption>Skill: the judge's integer verdict against the human label ({level} intervals, "
        f"{s.exact_agreement.n_units} documents resampled whole)</caption><thead><tr><th scope=col>figure</th>"
        "<th scope=col>judge</th><th scope=col>no-information baseline</th><th scope=col>human-human ceiling</th>"
        "</tr></thead><tbody>"
    )

    def ceiling(name: str) -> str:
        if c is None:
            return "no several annotators"
        return _interval(getattr(c, name), f"{at}.ceiling.{name}")

    rows = [
        ("weighted kappa (quadratic)", _interval(s.weighted_kappa, f"{at}.skill.weighted_kappa"),
         _num(b.weighted_kappa, f"{at}.baseline.weighted_kappa"), ceiling("weighted_kappa")),
        ("Spearman's rho", _interval(s.spearman, f"{at}.skill.spearman"), "undefined (constant)", "not computed"),
        ("exact agreement", _interval(s.exact_agreement, f"{at}.skill.exact_agreement"),
         _num(b.exact_agreement, f"{at}.baseline.exact_agreement"), ceiling("exact_agreement")),
        (f"agreement within tolerance {s.tolerance} (|judge - human| &lt; {s.tolerance})",
         _interval(s.within_tolerance, f"{at}.skill.within_tolerance"),
         _num(b.within_tolerance, f"{at}.baseline.within_tolerance"), ceiling("within_tolerance")),
    ]  # fmt: skip
    body = "".join(f"<tr><th scope=row>{n}</th><td>{j}</td><td>{bl}</td><td>{ce}</td></tr>" for n, j, bl, ce in rows)
    verdict = (
        "The judge adds information over the human-label distribution: its weighted kappa's interval lies above 0."
        if card.beats_baseline
        else "The judge adds no information over the label distribution here: its weighted kappa's interval reaches 0."
    )
    if not card.agrees_more_than_baseline:
        verdict += (
            f" Always answering {b.point} would agree within tolerance {s.tolerance} at least as often as the judge "
            "does: the labels are concentrated, so agreement alone says little about this judge."
        )
    ceiling_note = (
        ""
        if c is None
        else f"<p class=note>Ceiling: {c.n_annotators} annotators on {c.n_items} items, one annotator's label "
        "against another's.</p>"
    )
    return head + body + f"</tbody></table><p class=verdict>{verdict}</p>{ceiling_note}"


def _confusion(card: ReportCard, at: str) -> str:
    k = card.n_labels
    head = "".join(f"<th scope=col>human {h}</th>" for h in range(1, k + 1))
    rows = "".join(
        f"<tr><th scope=row>judge {j + 1}</th>"
        + "".join(f"<td>{_count(card.confusion[j][h], f'{at}.confusion.{j}.{h}')}</td>" for h in range(k))
        + "</tr>"
        for j in range(k)
    )
    return (
        "<table><caption>Confusion matrix: items by the judge's verdict (rows) and the human label (columns)"
        f"</caption><thead><tr><td></td>{head}</tr></thead><tbody>{rows}</tbody></table>"
    )


def _mode(card: ReportCard, number: int, mode: ModeEvidence, at: str) -> str:
    path = f"{at}.modes.{number}"
    figure = f"{card.judge}-{card.prompt_family}-{card.criterion}-{mode.mode}".replace(" ", "-")
    figure = "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in figure)
    labels = "".join(
        f"<tr><th scope=row>{row.label}</th><td>{_count(row.n_items, f'{path}.per_label.{i}.n_items')}</td>"
        f"<td>{_count(row.n_documents, f'{path}.per_label.{i}.n_documents')}</td>"
        f"<td>{_num(row.set_coverage, f'{path}.per_label.{i}.set_coverage')}</td>"
        f"<td>{_num(row.accept_share, f'{path}.per_label.{i}.accept_share')}</td>"
        f"<td>{_num(row.wrongly_accepted_share, f'{path}.per_label.{i}.wrongly_accepted_share')}</td></tr>"
        for i, row in enumerate(mode.per_label)
    )
    sizes = [str(size) for size in range(len(mode.set_size_counts))]
    size_chart = bar_chart(
        f"{figure}-sizes",
        f"Set sizes, {mode.mode} mode",
        f"Held-out items per served set size 0 to {card.n_labels} at alpha {mode.alpha:g}; the table below gives "
        "the counts.",
        sizes,
        [float(c) for c in mode.set_size_counts],
        x_label="set size (labels)",
        y_label="items",
    )
    size_table = "".join(
        f"<td>{_count(c, f'{path}.set_size_counts.{i}')}</td>" for i, c in enumerate(mode.set_size_counts)
    )
    curve = mode.operating_curve
    curve_chart = line_chart(
        f"{figure}-curve",
        f"Operating curve, {mode.mode} mode",
        "Accept share and error among accepted on held-out documents at each accept_alpha; the table below gives "
        "the values.",
        [f"{p.accept_alpha:g}" for p in curve],
        [("accept share", [p.accept_share for p in curve]),
         ("error among accepted", [p.error_among_accepted for p in curve])],
        x_label="accept_alpha",
        y_label="share",
    )  # fmt: skip
    curve_rows = "".join(
        f"<tr><th scope=row>{p.accept_alpha:g}</th>"
        f"<td>{_num(p.accept_share, f'{path}.operating_curve.{i}.accept_share')}</td>"
        f"<td>{_num(p.error_among_accepted, f'{path}.operating_curve.{i}.error_among_accepted')}</td>"
        f"<td>{_count(p.n_accepted, f'{path}.operating_curve.{i}.n_accepted')}</td></tr>"
        for i, p in enumerate(curve)
    )
    return (
        f"<h3>Guarantee mode {html.escape(mode.mode)} (held-out documents)</h3>"
        f"<p>Sets at alpha {mode.alpha:g}: coverage {_num(mode.coverage, path + '.coverage')}, mean set size "
        f"{_num(mode.mean_set_size, path + '.mean_set_size', 2)}; at tolerance {card.skill.tolerance} and accept_alpha "
        f"{mode.accept_alpha:g}: accept share {_num(mode.accept_share, path + '.accept_share')}, wrongly accepted "
        f"share {_num(mode.wrongly_accepted_share, path + '.wrongly_accepted_share')}.</p>"
        f"<table><caption>Per human label ({html.escape(mode.mode)}, accept_alpha {mode.accept_alpha:g})</caption>"
        "<thead><tr><th scope=col>human label</th><th scope=col>items</th><th scope=col>documents</th>"
        "<th scope=col>set coverage</th><th scope=col>accept share</th><th scope=col>wrongly accepted share</th>"
        f"</tr></thead><tbody>{labels}</tbody></table>"
        f"<figure>{size_chart}</figure>"
        f"<table><caption>Items per set size ({html.escape(mode.mode)})</caption><thead><tr>"
        + "".join(f"<th scope=col>{s}</th>" for s in sizes)
        + f"</tr></thead><tbody><tr>{size_table}</tr></tbody></table>"
        f"<figure>{curve_chart}</figure>"
        f"<table><caption>Operating curve ({html.escape(mode.mode)}, tolerance {card.skill.tolerance})</caption>"
        "<thead><tr><th scope=col>accept_alpha</th><th scope=col>accept share</th>"
        "<th scope=col>error among accepted</th><th scope=col>items accepted</th></tr></thead>"
        f"<tbody>{curve_rows}</tbody></table>"
    )


def _planner(card: ReportCard, planner: Planner, at: str) -> str:
    path = f"{at}.planner"
    figure = "".join(ch if ch.isalnum() else "-" for ch in f"{card.judge}-{card.prompt_family}-{card.criterion}")
    points = planner.points
    chart = line_chart(
        f"{figure}-planner",
        "Planner: accept share by labelled documents",
        "Accept share by number of documents (measured: the mean over draws; projected: the file projected to "
        "that size), with the 10th to 90th percentile band; the table below gives the values.",
        [str(p.n_documents) for p in points],
        [("accept share", [p.accept_share for p in points])],
        band=([p.accept_share_low for p in points], [p.accept_share_high for p in points]),
        x_label="labelled documents",
        y_label="accept share",
    )
    rows = "".join(
        f"<tr><th scope=row>{_count(p.n_documents, f'{path}.points.{i}.n_documents')}"
        f"{' (projected)' if p.projected else ''}</th>"
        f"<td>{_num(p.accept_share, f'{path}.points.{i}.accept_share')}</td>"
        f"<td>{_num(p.accept_share_low, f'{path}.points.{i}.accept_share_low')} to "
        f"{_num(p.accept_share_high, f'{path}.points.{i}.accept_share_high')}</td>"
        f"<td>{_num(p.mean_set_size, f'{path}.points.{i}.mean_set_size', 2)}</td>"
        f"<td>{_num(p.set_size_low, f'{path}.points.{i}.set_size_low', 2)} to "
        f"{_num(p.set_size_high, f'{path}.points.{i}.set_size_high', 2)}</td></tr>"
        for i, p in enumerate(points)
    )
    needed = planner.documents_for_target
    answer = (
        f"About {_count(needed, path + '.documents_for_target')} labelled documents reach an accept share of "
        f"{_num(planner.target_share, path + '.target_share', 2)}."
        if needed is not None
        else f"No size up to {points[-1].n_documents} documents reaches an accept share of "
        f"{_num(planner.target_share, path + '.target_share', 2)}: this judge needs more than labels here."
    )
    return (
        f"<h3>Planner: how many documents to label</h3><p>At /v1/score's defaults ({html.escape(planner.mode)} mode, "
        f"tolerance {planner.tolerance}, accept_alpha {planner.accept_alpha:g}, alpha {planner.alpha:g}). {answer}</p>"
        f"<figure>{chart}</figure><table><caption>Planner: below the file's size, rules fitted on drawn documents "
        "and served on its other documents; from it on (projected), the file counted as that many documents, the "
        "band from files drawn with replacement</caption><thead><tr><th scope=col>documents</th>"
        "<th scope=col>accept share</th>"
        "<th scope=col>10th to 90th percentile</th><th scope=col>mean set size</th>"
        f"<th scope=col>10th to 90th percentile</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _e_process(m: MonitorCell, i: int) -> str:
    at = f"monitors.{i}"
    cell = f"{m.prompt_family} / {m.criterion} ({m.input_kind})"
    head = f"<h3>e-process of {html.escape(cell)}</h3>"
    points = m.e_process
    if not points:
        why = ("no document of it is closed yet" if m.groups == 0
               else "it was stored before monitors kept their e-process; it starts at its next document")  # fmt: skip
        return f"{head}<p class=note>No point to draw: {why}.</p>"
    alarm = m.alarm
    said = (
        "No alarm: the e-value has stayed below the threshold."
        if alarm is None
        else f"Alarm at label {_count(alarm.label, at + '.alarm.label')} (document "
        f"{_count(alarm.document, at + '.alarm.document')}): e-value {_num(alarm.e_value, at + '.alarm.e_value')} "
        f"reached the threshold. {html.escape(alarm.explanation)}."
    )
    chart = e_process_chart(
        f"monitor-{m.monitor_id}-e-process",
        f"e-process of {cell}",
        f"The cell's e-value after {points[-1].documents} documents and {points[-1].labels} labels, at "
        f"{len(points)} points, on a log scale (log10 of 1 + e-value) against labels counted; the dashed line is the "
        f"alarm threshold {m.threshold:.6g} (horizon {m.horizon} over delta {m.delta:g})"
        + ("" if alarm is None else f"; the diamond marks the alarm at label {alarm.label}")
        + ". The table below gives the values.",
        [p.labels for p in points],
        [p.e_value for p in points],
        threshold=m.threshold,
        alarm=None if alarm is None else (alarm.label, alarm.e_value),
    )
    rows = "".join(
        f"<tr><th scope=row>{_count(p.documents, f'{at}.e_process.{j}.documents')}</th>"
        f"<td>{_count(p.labels, f'{at}.e_process.{j}.labels')}</td>"
        f"<td>{_num(p.e_value, f'{at}.e_process.{j}.e_value')}</td></tr>"
        for j, p in enumerate(points)
    )
    return (
        f"{head}<p>The cell's e-value at {len(points)} points: every "
        f"{_count(m.e_process_step, at + '.e_process_step')} documents counted, and the latest; the monitor alarms "
        f"when it reaches {_num(m.threshold, at + '.threshold', 1)}. {said}</p><figure>{chart}</figure>"
        f"<details><summary>The points of the e-process ({len(points)})</summary><table><caption>e-process of "
        f"{html.escape(cell)}</caption><thead><tr><th scope=col>documents</th><th scope=col>labels</th>"
        f"<th scope=col>e-value</th></tr></thead><tbody>{rows}</tbody></table></details>"
    )


def _monitors(report: JudgeReport) -> str:
    if report.monitors is None:
        return f"<h2>Monitors</h2><p>{html.escape(report.monitors_note)}</p>"
    if not report.monitors:
        return "<h2>Monitors</h2><p>No feedback monitor of this judge yet: send labels to POST /v1/feedback.</p>"
    rows = []
    for i, m in enumerate(report.monitors):
        alarm = "none" if m.alarm is None else html.escape(m.alarm.explanation)
        rows.append(
            f"<tr><th scope=row>{html.escape(m.prompt_family)} / {html.escape(m.criterion)} "
            f"({html.escape(m.input_kind)})"
            f"</th><td>{html.escape(m.status)}</td><td>{_count(m.labels, f'monitors.{i}.labels')}</td>"
            f"<td>{_num(m.e_value, f'monitors.{i}.e_value')}</td><td>{alarm}</td></tr>"
        )
    return (
        "<h2>Monitors</h2><table><caption>Feedback monitors of this judge's cells</caption><thead><tr>"
        "<th scope=col>cell</th><th scope=col>status</th><th scope=col>labels</th><th scope=col>e-value</th>"
        f"<th scope=col>alarm</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
        + "".join(_e_process(m, i) for i, m in enumerate(report.monitors))
    )


def _card(card: ReportCard, number: int) -> str:
    at = f"cards.{number}"
    modes = "".join(_mode(card, i, m, at) for i, m in enumerate(card.modes))
    planner = "" if card.planner is None else _planner(card, card.planner, at)
    return (
        f"<section><h2>{html.escape(card.prompt_family)} / {html.escape(card.criterion)}</h2>"
        f"<p>{_count(card.n_items, at + '.n_items')} items in {_count(card.n_documents, at + '.n_documents')} "
        f"documents, labels 1 to {card.n_labels}; served from {html.escape(card.input_kind)} verdicts with "
        f"{html.escape(card.method)}; held-out figures from {card.heldout.folds} folds by document.</p>"
        f"{_skill(card, at)}{_confusion(card, at)}{modes}{planner}</section>"
    )


def report_page(report: JudgeReport, json_path: str) -> str:
    """The page (module docstring); ``json_path`` links the same report as JSON."""
    title = f"Report card: {report.judge}"
    cards: Sequence[ReportCard] = report.cards
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body><main>"
        f"<h1>{html.escape(title)}</h1><p class=note>{html.escape(report.source)}"
        + (f", computed {html.escape(report.created_at)}" if report.created_at else "")
        + f'. <a href="{html.escape(json_path)}">The same figures as JSON</a>.</p>'
        + "".join(_card(card, i) for i, card in enumerate(cards))
        + _monitors(report)
        + "</main></body></html>"
    )
