"""The prompt of a configured rubric (your own criterion), and the rubric's format: shared by the service's live
calls and ``python -m offline collect --labels`` (offline may import ``judges`` only).

The format and rules are stated in :mod:`service.judging.rubrics` (RUBRICS_FILE).
"""

from __future__ import annotations

import re

import msgspec

from judges.prompts.families import ChatMessage
from judges.prompts.untrusted import UNTRUSTED_NOTE, fence

__all__ = ["BUILTIN", "MAX_LABELS", "Rubric", "RubricError", "decode_rubrics", "rubric_messages"]

MAX_LABELS = 10
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
BUILTIN = ("coherence", "consistency", "fluency", "relevance", "faithfulness")


class RubricError(ValueError):
    """RUBRICS_FILE cannot be used; the message names the file and the problem."""


class Rubric(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One configured criterion (module docstring)."""

    criterion: str
    description: str
    scale_max: int = 5
    anchors: dict[str, str] = {}
    prompt_family: str = ""

    @property
    def family(self) -> str:
        """The prompt family its live calls are calibrated under."""
        return self.prompt_family or f"rubric-{self.criterion}"


def decode_rubrics(data: bytes, *, source: str) -> dict[str, Rubric]:
    """Decode and check a rubrics file's bytes; RubricError names the source and the first problem."""
    try:
        rubrics = msgspec.json.decode(data, type=list[Rubric])
    except (msgspec.ValidationError, msgspec.DecodeError) as error:
        raise RubricError(f"{source}: {error}") from None
    found: dict[str, Rubric] = {}
    for position, rubric in enumerate(rubrics):
        where = f"{source}: [{position}] ({rubric.criterion!r})"
        if not _NAME.match(rubric.criterion) or rubric.criterion in BUILTIN:
            raise RubricError(f"{where}: criterion must be a new name (letters, digits, _ or -), not a built-in one")
        if rubric.criterion in found:
            raise RubricError(f"{where}: criterion repeated")
        if not rubric.description.strip():
            raise RubricError(f"{where}: description is empty")
        if not 2 <= rubric.scale_max <= MAX_LABELS:
            raise RubricError(f"{where}: scale_max {rubric.scale_max} must lie in 2..{MAX_LABELS}")
        labels = {str(k) for k in range(1, rubric.scale_max + 1)}
        for key, text in rubric.anchors.items():
            if key not in labels or not text.strip():
                raise RubricError(f"{where}: anchor {key!r} must name a label 1..{rubric.scale_max} with a text")
        if rubric.prompt_family and not _NAME.match(rubric.prompt_family):
            raise RubricError(f"{where}: prompt_family {rubric.prompt_family!r} must be a name")
        found[rubric.criterion] = rubric
    return found


def rubric_messages(rubric: Rubric, document: str, summary: str) -> list[ChatMessage]:
    """The direct-scoring chat prompt of a rubric: its definition, anchors, the texts, and a 1..K answer format."""
    k = rubric.scale_max
    anchors = "".join(f"- {key}: {rubric.anchors[key]}\n" for key in sorted(rubric.anchors, key=int))
    system = (
        "You are a careful evaluator. You rate a text on one criterion, using only the rubric given. " + UNTRUSTED_NOTE
    )
    user = (
        f"Criterion: {rubric.criterion} - {rubric.description}\n"
        f"Scale: an integer from 1 (worst) to {k} (best).\n"
        + (f"Anchors:\n{anchors}" if anchors else "")
        + f"\nSource:\n{fence('SOURCE', document)}\n\nText to evaluate:\n{fence('TEXT', summary)}\n\n"
        f"Answer with the score alone, a single integer from 1 to {k}."
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]
