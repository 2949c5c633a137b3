"""Your own criteria: rubrics read from RUBRICS_FILE, and the direct-scoring prompt built from one.

RUBRICS_FILE is a JSON list, one object per criterion (file beside JUDGES_FILE by convention)::

    [{"criterion": "helpfulness",
      "description": "How well the response answers the user's request.",
      "scale_max": 7,
      "anchors": {"1": "Ignores the request.", "4": "Partly answers it.", "7": "Fully answers it."},
      "prompt_family": "rubric-helpfulness"}]

``criterion``: a name (a letter, then letters, digits, ``_``, ``-``; at most 64) that is not a built-in criterion;
``description``: non-empty; ``scale_max``: K in 2..10 (the scale is 1..K); ``anchors``: optional texts for some
labels "1".."K"; ``prompt_family``: optional, default ``rubric-<criterion>``. A live call for the criterion asks the
judge with :func:`rubric_messages` and is calibrated only by thresholds fitted under that prompt family, so a
threshold fitted on another prompt never applies: **change ``prompt_family`` when you change the rubric's text**
(and recalibrate). A malformed file stops the service at start-up with the file and the problem named.
"""

from __future__ import annotations

import os
from pathlib import Path

from judges.prompts.rubric import BUILTIN, MAX_LABELS, Rubric, RubricError, decode_rubrics, rubric_messages

__all__ = ["BUILTIN", "MAX_LABELS", "Rubric", "RubricError", "decode_rubrics", "load_rubrics", "rubric_messages"]


def load_rubrics(path: str | os.PathLike[str] | None) -> dict[str, Rubric]:
    """The rubrics of RUBRICS_FILE by criterion ({} when unset); RubricError names the file and the problem."""
    if path is None:
        return {}
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise RubricError(f"{path}: cannot read RUBRICS_FILE: {error.strerror or error}") from None
    return decode_rubrics(data, source=str(path))
