"""The planner: accept share and set size as functions of the number of labelled documents.

Rules, stated once (the file has ``N`` documents, sorted by name; K labels):

* **Measured** (``n < N``, :func:`document_draws`): ``n_draws`` draws of ``n`` distinct documents
  (``default_rng([seed, n]).choice(..., replace=False)``, one draw after the other), the rules fitted on them and
  served on the file's other documents. The point is the mean over draws, the band their 10th and 90th percentiles
  (numpy's linear quantiles), widened to hold the mean when it lies outside. A random n-document part of a random
  file is a random n-document file, so the mean is an unbiased estimate of what a file of n documents gives.
* **Projected** (``n >= N``, :func:`file_projection`): the file taken as a file of ``n`` documents like its own.
  The rules are fitted on the whole file with every document counted ``w = n / N`` times (``document_weight`` of
  :func:`calibration.per_label.fit.fit_label_rule`: the evidence minimums, each label's conformal risk control and
  the verdict-evidence counts are those of a file of n documents whose documents look like the file's; the skill
  test's normal score is scaled by sqrt(w)) and served on the file's own items, which stand for the population's
  verdicts (serving each document by a fit without it instead moved the share by 0.007 on average on SummEval, and
  made it hinge on single documents). The point is that one answer.
* **Projected band** (:func:`document_draws` from ``N`` on): the same projection from ``n_draws`` files of ``N``
  documents drawn with replacement from the file (``default_rng([seed, N])``, the same files for every projected
  size; each copy a document of its own), each counted ``n / N`` times and served on the file's items: how much the
  projection depends on which documents the file happened to hold. The band is the point plus and minus the larger
  of its distances to their 10th and 90th percentiles, clipped to [0, 1] (shares) and [1, K] (set sizes): a file
  drawn with replacement holds about 63% of the file's documents, so it lacks a rare document more often than the
  file does and its projection leans toward accepting more; that lean belongs to the redrawing, not to the file, so
  the band takes the larger deviation on both sides.
* **Why not draw n documents with replacement** (the bootstrap the planner used before): an accept needs a narrow
  set, and a narrow set needs a label's rare far-off verdicts to be absent or few among the calibration documents.
  The chance of that is a convex function of their rate, and the file's estimate of the rate is noisy; a draw of n
  from the file adds a second round of sampling on top of the file's own, and by Jensen's inequality the mean over
  such draws overstates the chance, hence the accept share (projecting 50 documents from ten 30-document SummEval
  files: +0.058 on average where the measured share is above 0.05; this projection: +0.008; docs/report-cards.md).
  No projection beyond N is unbiased (a chance over n documents is a polynomial of degree n in the rate; N
  documents estimate only degree <= N without bias). This one adds no sampling of its own: the file's own sampling
  noise, larger than that of an n-document file, is the only one, and the band shows it.
* **Documents for a target share** (:func:`documents_for`): the smallest size of the grid whose point reaches the
  target; None when none does.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import numpy as np

from calibration.errors import CalibrationError, EmptyCalibrationError
from calibration.report_card.card import PlannerPoint

__all__ = ["DocumentDraw", "document_draws", "documents_for", "file_projection", "planner_point"]


class DocumentDraw(msgspec.Struct, frozen=True, kw_only=True):
    """One draw: the fitted items (indices, repeated for a document drawn twice) with their documents (a copy
    named ``<document>#<copy>``), how many documents each fitted document counts as, the served items, and whether
    the draw is projected (module rules)."""

    fitted: list[int]
    fitted_groups: list[str]
    served: list[int]
    projected: bool
    document_weight: float = 1.0


def _documents(groups: Sequence[object], n_documents: int) -> tuple[np.ndarray, list[str]]:
    names = np.asarray([str(g) for g in groups], dtype=object)
    documents = sorted(set(names.tolist()))
    if n_documents < 1 or len(documents) < 2:
        raise CalibrationError(f"draw at least 1 document from at least 2, got {n_documents} of {len(documents)}")
    return names, documents


def document_draws(groups: Sequence[object], n_documents: int, n_draws: int, seed: int) -> list[DocumentDraw]:
    """The draws of one size (module rules): measured below the file's size, the projected band's files from it on."""
    names, documents = _documents(groups, n_documents)
    members = {document: np.flatnonzero(names == document) for document in documents}
    projected = n_documents >= len(documents)
    weight = n_documents / len(documents) if projected else 1.0
    rng = np.random.default_rng([seed, len(documents) if projected else n_documents])
    draws = []
    for _ in range(n_draws):
        chosen = rng.choice(len(documents), len(documents) if projected else n_documents, replace=projected)
        fitted: list[int] = []
        fitted_groups: list[str] = []
        for copy, pick in enumerate(chosen.tolist()):
            items = members[documents[pick]]
            fitted += items.tolist()
            fitted_groups += [f"{documents[pick]}#{copy}"] * items.size
        served = np.arange(names.size) if projected else np.flatnonzero(~np.isin(names, [documents[c] for c in chosen]))
        draws.append(
            DocumentDraw(
                fitted=fitted,
                fitted_groups=fitted_groups,
                served=served.tolist(),
                projected=projected,
                document_weight=weight,
            )
        )
    return draws


def file_projection(groups: Sequence[object], n_documents: int) -> DocumentDraw:
    """The projected point's fit (module rules): every item of the file, each document counted ``n / N`` times,
    served on every item."""
    names, documents = _documents(groups, n_documents)
    if n_documents < len(documents):
        raise CalibrationError(f"{n_documents} documents are measured, not projected, from a file of {len(documents)}")
    every = list(range(names.size))
    return DocumentDraw(
        fitted=every,
        fitted_groups=names.tolist(),
        served=every,
        projected=True,
        document_weight=n_documents / len(documents),
    )


def _band(values: np.ndarray, point: float | None, floor: float, ceiling: float) -> tuple[float, float, float]:
    """(point, low, high) of one figure (module rules): measured when ``point`` is None, else projected."""
    low, high = (float(q) for q in np.quantile(values, [0.1, 0.9]))
    if point is None:
        mean = float(values.mean())
        return mean, min(low, mean), max(high, mean)
    reach = max(high - point, point - low, 0.0)
    return point, max(point - reach, floor), min(point + reach, ceiling)


def planner_point(
    n_documents: int,
    projected: bool,
    accept_shares: Sequence[float],
    set_sizes: Sequence[float],
    *,
    centre: tuple[float, float] | None = None,
    n_labels: int | None = None,
) -> PlannerPoint:
    """The point of one size (module rules) from its draws' accept shares and mean set sizes: measured without
    ``centre``; projected with it, the projection's (accept share, mean set size) on a scale of ``n_labels``."""
    shares, sizes = np.asarray(accept_shares, dtype=float), np.asarray(set_sizes, dtype=float)
    if shares.size == 0 or shares.size != sizes.size:
        raise EmptyCalibrationError("need one accept share and one set size per draw")
    if centre is not None and n_labels is None:
        raise CalibrationError("a projected point needs the scale's n_labels to bound its band")
    share, share_low, share_high = _band(shares, None if centre is None else centre[0], 0.0, 1.0)
    size, size_low, size_high = _band(sizes, None if centre is None else centre[1], 1.0, float(n_labels or 1))
    return PlannerPoint(
        n_documents=n_documents,
        projected=projected,
        n_draws=int(shares.size),
        accept_share=share,
        accept_share_low=share_low,
        accept_share_high=share_high,
        mean_set_size=size,
        set_size_low=size_low,
        set_size_high=size_high,
    )


def documents_for(points: Sequence[PlannerPoint], target: float) -> int | None:
    """The smallest size whose point reaches ``target`` (module rules)."""
    return next((p.n_documents for p in sorted(points, key=lambda p: p.n_documents) if p.accept_share >= target), None)
