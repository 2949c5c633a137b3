"""The planner: accept share and set size as functions of the number of labelled documents.

Rules, stated once:

* **Draws** (:func:`document_draws`): for each size ``n``, ``n_draws`` draws of ``n`` documents from the file's
  ``N`` (documents sorted by name, ``default_rng([seed, n])`` for the size's draws in turn). Below ``N``: ``n``
  distinct documents (``choice(..., replace=False)``), the rules fitted on them and served on the file's other
  documents (measured). From ``N`` on: ``n`` documents drawn with replacement, each copy a document of its own, the
  rules fitted on them and served on every document of the file (projected: the file's documents stand for the
  population they were drawn from, the bootstrap's principle; a certified bound depends on how many documents it
  saw, which is what the draw varies).
* **Points** (:func:`planner_point`): the mean over draws, and the 10th and 90th percentiles (numpy's linear
  quantiles) as the spread.
* **Documents for a target share** (:func:`documents_for`): the smallest size of the grid whose mean accept share
  reaches the target; None when none does.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import numpy as np

from calibration.errors import CalibrationError, EmptyCalibrationError
from calibration.report_card.card import PlannerPoint

__all__ = ["DocumentDraw", "document_draws", "documents_for", "planner_point"]


class DocumentDraw(msgspec.Struct, frozen=True, kw_only=True):
    """One draw: the fitted items (indices, repeated for a document drawn twice) with their documents (a copy
    named ``<document>#<copy>``), the served items, and whether the draw is projected (module rules)."""

    fitted: list[int]
    fitted_groups: list[str]
    served: list[int]
    projected: bool


def document_draws(groups: Sequence[object], n_documents: int, n_draws: int, seed: int) -> list[DocumentDraw]:
    """The draws of one size (module rules)."""
    names = np.asarray([str(g) for g in groups], dtype=object)
    documents = sorted(set(names.tolist()))
    if n_documents < 1 or len(documents) < 2:
        raise CalibrationError(f"draw at least 1 document from at least 2, got {n_documents} of {len(documents)}")
    members = {document: np.flatnonzero(names == document) for document in documents}
    rng = np.random.default_rng([seed, n_documents])
    projected = n_documents >= len(documents)
    draws = []
    for _ in range(n_draws):
        chosen = rng.choice(len(documents), n_documents, replace=projected)
        fitted: list[int] = []
        fitted_groups: list[str] = []
        for copy, pick in enumerate(chosen.tolist()):
            items = members[documents[pick]]
            fitted += items.tolist()
            fitted_groups += [f"{documents[pick]}#{copy}"] * items.size
        served = np.arange(names.size) if projected else np.flatnonzero(~np.isin(names, [documents[c] for c in chosen]))
        draws.append(
            DocumentDraw(fitted=fitted, fitted_groups=fitted_groups, served=served.tolist(), projected=projected)
        )
    return draws


def planner_point(
    n_documents: int, projected: bool, accept_shares: Sequence[float], set_sizes: Sequence[float]
) -> PlannerPoint:
    """The point of one size from its draws' held-out accept shares and mean set sizes (module rules)."""
    shares, sizes = np.asarray(accept_shares, dtype=float), np.asarray(set_sizes, dtype=float)
    if shares.size == 0 or shares.size != sizes.size:
        raise EmptyCalibrationError("need one accept share and one set size per draw")
    share_low, share_high = np.quantile(shares, [0.1, 0.9])
    size_low, size_high = np.quantile(sizes, [0.1, 0.9])
    return PlannerPoint(
        n_documents=n_documents,
        projected=projected,
        n_draws=int(shares.size),
        accept_share=float(shares.mean()),
        accept_share_low=float(share_low),
        accept_share_high=float(share_high),
        mean_set_size=float(sizes.mean()),
        set_size_low=float(size_low),
        set_size_high=float(size_high),
    )


def documents_for(points: Sequence[PlannerPoint], target: float) -> int | None:
    """The smallest size whose mean accept share reaches ``target`` (module rules)."""
    return next((p.n_documents for p in sorted(points, key=lambda p: p.n_documents) if p.accept_share >= target), None)
