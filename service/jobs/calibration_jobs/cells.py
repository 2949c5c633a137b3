"""The labelled cells of a calibration job's body, and whether each can be fitted here (rules:
``service.jobs.calibration_jobs.jobs``): printable names, enough items and groups, at most ``max_cell_rows`` rows; and
the warnings for levels a cell is too small for.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence

from artifact.labels import LabelledCell, LabelRow, labelled_cells, min_items_for, read_labels
from service.artifacts.registry import is_printable_name
from service.errors import InvalidRequestError
from service.jobs.calibration_jobs.fitting import cell_name

__all__ = ["MIN_CELL_GROUPS", "MIN_CELL_ITEMS", "check_cells", "job_cells", "level_warnings"]

MIN_CELL_GROUPS = 4  # outer splits by group, and cross-fitting halves that are split by group again
MIN_CELL_ITEMS = 8  # learned_lac splits each calibration half again (model and threshold)


def level_warnings(cells: Sequence[LabelledCell], levels: Sequence[float]) -> list[str]:
    lines = []
    for cell in cells:
        n = len(cell.item_ids)
        for alpha in levels:
            need = min_items_for(alpha)
            if n < need:
                lines.append(
                    f"{cell.judge} / {cell.prompt_family} / {cell.criterion}: {n} labelled items; "
                    f"alpha={alpha} needs at least {need} for a finite threshold (its sets are the full "
                    "scale)"
                )
    return lines


def job_cells(body: bytes, scale: int) -> tuple[int, list[LabelledCell]]:
    """(rows, the labelled cells) of a body (LabelsError names the line and field of a bad row)."""
    rows: list[LabelRow] = read_labels([("body", body)], default_scale=scale)
    return len(rows), labelled_cells(rows)


def check_cells(cells: Sequence[LabelledCell], *, max_cell_rows: int | None) -> None:
    """InvalidRequestError (422) naming the first cell that cannot be fitted here (``jobs`` rules: printable names,
    at least MIN_CELL_GROUPS groups and MIN_CELL_ITEMS items, at most ``max_cell_rows`` rows)."""
    for cell in cells:
        bad = [name for name in (cell.judge, cell.prompt_family, cell.criterion) if not is_printable_name(name)]
        if bad:
            raise InvalidRequestError(
                f"cell {cell_name(cell)}: {', '.join(repr(b) for b in bad)} is not printable text; judge, "
                "prompt_family and criterion may not contain control, bidi-override or zero-width characters"
            )
        n_items, sizes = len(cell.item_ids), sorted(collections.Counter(cell.groups).values())
        n_groups = len(sizes)
        quarter = sum(sizes[: n_groups // 4])
        if n_groups < MIN_CELL_GROUPS or n_items < MIN_CELL_ITEMS or quarter < 2:
            raise InvalidRequestError(
                f"cell {cell_name(cell)} has {n_items} items in {n_groups} group(s) (smallest {sizes[:4]}): a "
                f"calibration needs at least {MIN_CELL_ITEMS} items in at least {MIN_CELL_GROUPS} distinct groups, "
                "and at least 2 items in its smallest quarter of the groups (held-out figures and the default method "
                "are chosen on splits by group, document or source); give a group per row, or label more documents"
            )
        if max_cell_rows is not None and n_items > max_cell_rows:
            raise InvalidRequestError(
                f"cell {cell_name(cell)} has {n_items} rows; at most MAX_CALIBRATION_CELL_ROWS={max_cell_rows} "
                "are fitted per cell (a fit's memory grows with its cell): subsample its items, or raise the limit"
            )
