"""Does a judge's reply come from the model its calibration was fitted on?

Calibration cells are keyed by the judge's name (judge, prompt family, criterion); the judge's ``model`` in
JUDGES_FILE is the model the service asks for under that name, and so the model the operator vouches the cell
was fitted on. Every OpenAI-compatible reply names the model that answered (``model``). Rule, case-insensitive:
the reply's model matches when it equals the configured ``model``, or is that model plus a dated snapshot tag
(``-2024-07-18``, ``-20240718``, ``@20240718``, ``-0613``): asking for an alias such as ``gpt-4o-mini`` is answered
by its current snapshot ``gpt-4o-mini-2024-07-18``, which is the alias the operator chose. Anything else (another
model, another size, a configured snapshot answered by a different one) is a mismatch: the calibrated thresholds
may not hold for that model's verdicts. A reply that names no model is not judged.
"""

from __future__ import annotations

import re

__all__ = ["MODEL_MISMATCH_FLAG", "is_model_mismatch"]

MODEL_MISMATCH_FLAG = "judge_model_mismatch"
_SNAPSHOT_TAG = re.compile(r"[-@](\d{4}-\d{2}-\d{2}|\d{8}|\d{4})")


def is_model_mismatch(configured: str, reported: str | None) -> bool:
    """True when the reply's ``reported`` model is neither ``configured`` nor a dated snapshot of it (rule above)."""
    if not reported:
        return False
    configured, reported = configured.strip().lower(), reported.strip().lower()
    if reported == configured:
        return False
    if reported.startswith(configured) and _SNAPSHOT_TAG.fullmatch(reported[len(configured) :]):
        return False
    return True
