"""Seeded synthetic labelled files for the per-label tests: documents of a few items, a judge of chosen skill."""

from __future__ import annotations

import numpy as np

LABEL_SHARES = np.array([0.08, 0.17, 0.30, 0.30, 0.15])  # human labels 1..5


def labelled_file(
    rng: np.random.Generator, n_documents: int, items_per_document: int, *, judge: str = "good"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(labels, judge scores, documents). ``judge``: "good" (70% exact, 27% one label off, 3% two off),
    "constant" (always 5) or "shuffled" (a good judge's scores permuted across the whole file)."""
    n = n_documents * items_per_document
    documents = np.repeat(np.arange(n_documents), items_per_document)
    labels = rng.choice(np.arange(1, 6), size=n, p=LABEL_SHARES)
    offsets = rng.choice([0, -1, 1, -2, 2], size=n, p=[0.70, 0.135, 0.135, 0.015, 0.015])
    scores = np.clip(labels + offsets, 1, 5)
    if judge == "constant":
        scores = np.full(n, 5)
    elif judge == "shuffled":
        scores = scores[rng.permutation(n)]
    return labels, scores.astype(float), documents
