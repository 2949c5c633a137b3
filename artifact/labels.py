"""The labelled JSON Lines format: a user's own judge verdicts with human labels, read and checked.

Pure: bytes in (one or more named chunks, e.g. files or an upload), typed rows and per-cell arrays out; no I/O.
``offline`` reads files and calls :func:`read_labels`; the service calls it on a request body. One JSON object per
line (blank lines ignored), one line per (judge, criterion, item):

===================  ========  =================================================================================
field                required  meaning
===================  ========  =================================================================================
``item_id``          yes       non-empty string naming the item
``criterion``        yes       a name: a letter, then letters, digits, ``_`` or ``-`` (at most 64), e.g.
                               ``helpfulness``; case matters
``human``            yes       number on the scale 1..K: one rating or a mean; the label is the nearest integer,
                               halves up (3.5 -> 4)
``judge``            yes       non-empty name of the judge whose verdict this is (at most 200 characters)
``judge_score``      one of    integer 1..K the judge gave
``judge_logprobs``   these     object with keys among "1".."K" -> natural log-probability (<= 0) of that score
``mean_of_samples``  three     number in 1..K: the mean of sampled scores (G-Eval style)
``scale_max``        no        K (2..10) for this row; default: the reader's ``default_scale`` (5, or the CLI's
                               ``--scale``); all rows of one criterion must share K
``prompt_family``    no        name of the prompt the judge was asked with (default ``custom``); a threshold
                               fitted under one prompt family never applies to another
``group``            no        a document or source id: items of one group stay on one side of every held-out
                               split; default the ``document``/``input`` text when given, else the ``item_id``
``document``         no        source text (alias ``input``; give one of the two)
``summary``          no        judged text (alias ``output``; give one of the two)
===================  ========  =================================================================================

Rules (each failure raises :class:`~calibration.errors.LabelsError` naming source, line and field): unknown fields
are refused (a misspelt name is caught); a verdict is required; values within the scale; no repeated
(``judge``, ``criterion``, ``item_id``) across all chunks; at least one row in each chunk.
The verdict used for calibration is ``judge_score`` when given, else the most probable label of ``judge_logprobs``
(ties: the lower label), else ``mean_of_samples`` rounded to the nearest integer (halves up): the conformal
core works on integer scores, so a mean of samples is calibrated as the score it rounds to.
A cell (judge, prompt family, criterion) uses probabilities only when every one of its rows has ``judge_logprobs``
(renormalised over 1..K, a missing label counting ``-inf``).

Prompt family and live judges: the service matches a verdict to thresholds by (``judge``, ``prompt_family``,
``criterion``), all three exactly. A live call of a configured judge (JUDGES_FILE) is looked up under the family of
the prompt the service sends: the judge's configured ``prompt_family`` (``paper``, ``geval`` or ``rts``;
``judges.prompts.families.PROMPT_FAMILIES``), ``rubric-<criterion>`` (or the rubric's own ``prompt_family``) for a
criterion of RUBRICS_FILE, and ``factuality_direct`` / ``factuality_qa`` / ``factuality_sentences`` for faithfulness.
The default ``custom`` is none of these, so rows calibrating a live judge must set ``prompt_family`` to the family its
live calls use; under ``custom`` the cell serves only verdicts sent with ``"prompt_family": "custom"`` (a calibration
job warns about such cells of a configured judge).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import msgspec
import numpy as np

from calibration.conformal import probabilities_from_logprobs
from calibration.errors import LabelsError
from calibration.order_statistics import threshold_rank

__all__ = [
    "DEFAULT_PROMPT_FAMILY",
    "DEFAULT_SCALE",
    "MAX_LABELS",
    "LabelRow",
    "LabelledCell",
    "labelled_cells",
    "min_items_for",
    "parse_labels",
    "read_labels",
    "round_half_up",
]

DEFAULT_SCALE = 5
MAX_LABELS = 10
DEFAULT_PROMPT_FAMILY = "custom"
CRITERION_PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
_FIELD = re.compile(r"`\$\.([A-Za-z_]+)|field `([A-Za-z_]+)`")


class _Row(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    item_id: str
    criterion: str
    human: float
    judge: str | None = None
    judge_score: int | None = None
    judge_logprobs: dict[str, float] | None = None
    mean_of_samples: float | None = None
    scale_max: int | None = None
    prompt_family: str | None = None
    group: str | None = None
    document: str | None = None
    summary: str | None = None
    input: str | None = None
    output: str | None = None


_DECODER = msgspec.json.Decoder(_Row)


class LabelRow(msgspec.Struct, frozen=True, kw_only=True):
    """One checked row: ``label`` is the integer human label, ``judge_score`` the integer verdict used."""

    source: str
    line: int
    item_id: str
    criterion: str
    judge: str
    prompt_family: str
    n_labels: int
    human: float
    label: int
    judge_score: int | None  # None only for a row read with require_verdict=False that has no verdict yet
    probabilities: tuple[float, ...] | None
    mean_of_samples: float | None
    group: str
    document: str | None
    summary: str | None


def round_half_up(value: float) -> int:
    """The nearest integer, halves rounded up (3.5 -> 4)."""
    return math.floor(value + 0.5)


def min_items_for(alpha: float, delta: float | None = None) -> int:
    """The fewest calibration items for a finite threshold at ``alpha``: marginal (``delta`` None) the smallest n
    with ceil((1 - alpha)(n + 1)) <= n, i.e. n >= (1 - alpha) / alpha; PAC at ``delta`` the smallest n whose
    rank (:func:`calibration.order_statistics.threshold_rank`) is <= n, about ln(delta) / ln(1 - alpha)."""
    a = Fraction(alpha).limit_denominator(10**9)
    if delta is None:
        return math.ceil((1 - a) / a)
    d = Fraction(delta).limit_denominator(10**9)
    n = max(1, math.floor(math.log(float(d)) / math.log(1 - float(a))) - 2)
    while threshold_rank(n, a, d) > n:
        n += 1
    return n


def _field_of(message: str) -> str | None:
    found = _FIELD.search(message)
    return None if found is None else (found.group(1) or found.group(2))


def _text(row: _Row, first: str, second: str, source: str, line: int) -> str | None:
    a: str | None = getattr(row, first)
    b: str | None = getattr(row, second)
    if a is not None and b is not None:
        raise LabelsError(source, line, second, f"give {first} or {second}, not both")
    value = a if a is not None else b
    if value is not None and not value.strip():
        raise LabelsError(source, line, first if a is not None else second, "is blank")
    return value


def _probabilities(logprobs: dict[str, float], n_labels: int, source: str, line: int) -> tuple[float, ...]:
    keys = [str(k) for k in range(1, n_labels + 1)]
    if not logprobs:
        raise LabelsError(source, line, "judge_logprobs", "holds no token")
    for key, value in logprobs.items():
        if key not in keys:
            raise LabelsError(source, line, "judge_logprobs", f"key {key!r} is not a label among 1..{n_labels}")
        if not math.isfinite(value) or value > 1e-9:
            raise LabelsError(source, line, "judge_logprobs", f"[{key!r}] = {value!r} is not a log-probability <= 0")
    values = np.array([logprobs.get(key, -math.inf) for key in keys], dtype=float)
    return tuple(float(p) for p in probabilities_from_logprobs(values))


def _check_row(row: _Row, source: str, line: int, default_scale: int, require_verdict: bool) -> LabelRow:
    """One decoded row checked field by field (module rules) -> its LabelRow; LabelsError on the first problem."""
    if not row.item_id.strip():
        raise LabelsError(source, line, "item_id", "is empty")
    if not CRITERION_PATTERN.match(row.criterion):
        raise LabelsError(
            source,
            line,
            "criterion",
            f"{row.criterion!r} is not a name (a letter, then letters, digits, '_' or '-', at most 64)",
        )
    judge, family = _judge_and_family(row, source, line, require_verdict)
    k = default_scale if row.scale_max is None else row.scale_max
    if not 2 <= k <= MAX_LABELS:
        raise LabelsError(source, line, "scale_max", f"{k} must lie in 2..{MAX_LABELS}")
    if not (math.isfinite(row.human) and 1 <= row.human <= k):
        raise LabelsError(source, line, "human", f"{row.human!r} is outside the scale 1..{k}")
    _check_verdict(row, k, source, line, require_verdict)
    probabilities = None if row.judge_logprobs is None else _probabilities(row.judge_logprobs, k, source, line)
    score = _verdict_score(row, probabilities, k)
    document = _text(row, "document", "input", source, line)
    summary = _text(row, "summary", "output", source, line)
    if row.group is not None and not row.group.strip():
        raise LabelsError(source, line, "group", "is blank")
    group = row.group if row.group is not None else (document if document is not None else row.item_id)
    return LabelRow(
        source=source,
        line=line,
        item_id=row.item_id,
        criterion=row.criterion,
        judge=judge,
        prompt_family=family,
        n_labels=k,
        human=float(row.human),
        label=min(k, round_half_up(row.human)),
        judge_score=score,
        probabilities=probabilities,
        mean_of_samples=row.mean_of_samples,
        group=group,
        document=document,
        summary=summary,
    )


def _judge_and_family(row: _Row, source: str, line: int, require_verdict: bool) -> tuple[str, str]:
    """The row's judge ("" when absent and not required) and prompt family (DEFAULT_PROMPT_FAMILY when absent)."""
    if row.judge is None and require_verdict:
        raise LabelsError(source, line, "judge", "Object missing required field `judge`")
    judge = row.judge or ""
    if (row.judge is not None and not row.judge.strip()) or len(judge) > 200:
        raise LabelsError(source, line, "judge", "must be a non-empty name of at most 200 characters")
    family = DEFAULT_PROMPT_FAMILY if row.prompt_family is None else row.prompt_family
    if not family.strip() or len(family) > 200:
        raise LabelsError(source, line, "prompt_family", "must be a non-empty name of at most 200 characters")
    return judge, family


def _check_verdict(row: _Row, k: int, source: str, line: int, require_verdict: bool) -> None:
    """A verdict present when required; ``judge_score`` and ``mean_of_samples`` on the scale 1..k."""
    unjudged = row.judge_score is None and row.judge_logprobs is None and row.mean_of_samples is None
    if unjudged and require_verdict:
        raise LabelsError(
            source, line, "judge_score", "a verdict is required: judge_score, judge_logprobs or mean_of_samples"
        )
    if row.judge_score is not None and not 1 <= row.judge_score <= k:
        raise LabelsError(source, line, "judge_score", f"{row.judge_score!r} is outside the scale 1..{k}")
    if row.mean_of_samples is not None and not (math.isfinite(row.mean_of_samples) and 1 <= row.mean_of_samples <= k):
        raise LabelsError(source, line, "mean_of_samples", f"{row.mean_of_samples!r} is outside the scale 1..{k}")


def _verdict_score(row: _Row, probabilities: tuple[float, ...] | None, k: int) -> int | None:
    """The verdict's score: ``judge_score``, else the most probable label (lower on ties), else the rounded mean."""
    if row.judge_score is not None:
        return row.judge_score
    if probabilities is not None:
        return max(range(k), key=lambda i: (probabilities[i], -i)) + 1
    if row.mean_of_samples is not None:
        return min(k, round_half_up(row.mean_of_samples))
    return None


def parse_labels(
    data: bytes, *, source: str, default_scale: int = DEFAULT_SCALE, require_verdict: bool = True
) -> list[LabelRow]:
    """Decode and check one chunk of labelled JSON Lines (rules in the module docstring; no cross-chunk checks).

    ``require_verdict=False`` (``offline collect --labels``) also reads rows without a verdict (and without
    ``judge``); they have ``judge_score`` None.

    Raises:
        LabelsError: malformed JSON, a missing/unknown/ill-typed field, a value off the scale, no row at all.
    """
    if not 2 <= default_scale <= MAX_LABELS:
        raise LabelsError(source, None, "scale_max", f"the default scale {default_scale} must lie in 2..{MAX_LABELS}")
    rows = []
    for number, raw in enumerate(data.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            row = _DECODER.decode(raw)
        except msgspec.ValidationError as error:
            raise LabelsError(source, number, _field_of(str(error)), str(error)) from None
        except msgspec.DecodeError as error:
            raise LabelsError(source, number, None, f"malformed JSON: {error}") from None
        rows.append(_check_row(row, source, number, default_scale, require_verdict))
    if not rows:
        raise LabelsError(source, None, None, "holds no labelled row (an empty file)")
    return rows


def read_labels(
    chunks: Iterable[tuple[str, bytes]], *, default_scale: int = DEFAULT_SCALE, require_verdict: bool = True
) -> list[LabelRow]:
    """Parse every (source, bytes) chunk and check them together: no repeated (judge, criterion, item_id), and one
    scale per criterion. Rows in chunk and line order.

    Raises:
        LabelsError: as :func:`parse_labels`, or a repeat / a second scale (naming both places).
    """
    rows: list[LabelRow] = []
    seen: dict[tuple[str, str, str], LabelRow] = {}
    scales: dict[str, LabelRow] = {}
    for source, data in chunks:
        for row in parse_labels(data, source=source, default_scale=default_scale, require_verdict=require_verdict):
            key = (row.judge, row.criterion, row.item_id)
            first = seen.setdefault(key, row)
            if first is not row:
                raise LabelsError(
                    row.source,
                    row.line,
                    "item_id",
                    f"{row.item_id!r} is repeated for judge "
                    f"{row.judge!r} and criterion {row.criterion!r} (first at {first.source}:"
                    f"{first.line})",
                )
            scale = scales.setdefault(row.criterion, row)
            if scale.n_labels != row.n_labels:
                raise LabelsError(
                    row.source,
                    row.line,
                    "scale_max",
                    f"criterion {row.criterion!r} is on the scale "
                    f"1..{row.n_labels} here but 1..{scale.n_labels} at {scale.source}:{scale.line}",
                )
            rows.append(row)
    return rows


@dataclass(frozen=True)
class LabelledCell:
    """The arrays of one (judge, prompt family, criterion), items sorted by ``item_id``.

    ``labels``/``judge_scores``: int64 in 1..n_labels; ``probabilities``: (n, n_labels) when every row had
    log-probs, else None; ``groups``: the split group of each item; ``means``: the rows' ``mean_of_samples`` when
    every row had one, else None.
    """

    judge: str
    prompt_family: str
    criterion: str
    n_labels: int
    item_ids: tuple[str, ...]
    labels: np.ndarray
    judge_scores: np.ndarray
    probabilities: np.ndarray | None
    groups: tuple[str, ...]
    means: np.ndarray | None = None  # mean_of_samples per item when every row has one

    @property
    def key(self) -> tuple[str, str, str]:
        """(judge, prompt_family, criterion)."""
        return (self.judge, self.prompt_family, self.criterion)


def labelled_cells(rows: Sequence[LabelRow]) -> list[LabelledCell]:
    """Group checked rows into cells (sorted by judge, prompt family, criterion); rows without a verdict are left
    out."""
    grouped: dict[tuple[str, str, str], list[LabelRow]] = {}
    for row in rows:
        if row.judge_score is None:
            continue
        grouped.setdefault((row.judge, row.prompt_family, row.criterion), []).append(row)
    cells = []
    for (judge, family, criterion), members in sorted(grouped.items()):
        members = sorted(members, key=lambda r: r.item_id)
        with_probs = all(r.probabilities is not None for r in members)
        with_means = all(r.mean_of_samples is not None for r in members)
        cells.append(
            LabelledCell(
                judge=judge,
                prompt_family=family,
                criterion=criterion,
                n_labels=members[0].n_labels,
                item_ids=tuple(r.item_id for r in members),
                labels=np.array([r.label for r in members], dtype=np.int64),
                judge_scores=np.array([r.judge_score for r in members], dtype=np.int64),
                probabilities=np.array([r.probabilities for r in members], dtype=float) if with_probs else None,
                groups=tuple(r.group for r in members),
                means=np.array([r.mean_of_samples for r in members], dtype=float) if with_means else None,
            )
        )
    return cells
