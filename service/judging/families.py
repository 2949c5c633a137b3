"""Which prompt families a configured judge's live calls are asked under, and labelled cells that can never match.

A live ``/v1/score`` call is looked up under the family of the prompt the service sends (service.scoring.resolve,
rule 4): for ``faithfulness`` the factuality method's family (``factuality_direct``, ``factuality_qa``,
``factuality_sentences``), for a criterion of RUBRICS_FILE the rubric's family (its ``prompt_family``, else
``rubric-<criterion>``), for any other criterion the judge's configured ``prompt_family`` (JUDGES_FILE: ``paper``,
``geval`` or ``rts``). A calibrated cell (judge, prompt family, criterion) of a configured judge under any other
family (the labelled format's default ``custom``, typically) never serves that judge's live calls: it serves only
verdicts sent with that ``prompt_family`` named.
"""

from __future__ import annotations

from collections.abc import Iterable

from judges.factuality.methods import FAITHFULNESS_PROMPT_FAMILIES
from service.judging.pool import JudgePool

__all__ = ["live_family_warnings", "live_prompt_families", "live_prompt_family"]


def live_prompt_family(pool: JudgePool, judge: str, criterion: str, factuality_method: str | None) -> str | None:
    """The family of the prompt a live call of ``judge`` for ``criterion`` is sent under (the factuality method's for
    faithfulness, the rubric's for a RUBRICS_FILE criterion, else the judge's own); None for an unconfigured judge."""
    if criterion == "faithfulness" and factuality_method is not None:
        return FAITHFULNESS_PROMPT_FAMILIES[factuality_method]
    rubric = pool.rubrics.get(criterion)
    if rubric is not None:
        return rubric.family
    config = pool.config(judge)
    return None if config is None else str(config.prompt_family)


def live_prompt_families(pool: JudgePool, judge: str, criterion: str) -> tuple[str, ...]:
    """The families a live call of ``judge`` for ``criterion`` may be asked under; () for an unconfigured judge."""
    if pool.config(judge) is None:
        return ()
    methods = list(FAITHFULNESS_PROMPT_FAMILIES) if criterion == "faithfulness" else [None]
    families = (live_prompt_family(pool, judge, criterion, method) for method in methods)
    return tuple(family for family in families if family is not None)


def live_family_warnings(pool: JudgePool, cells: Iterable[tuple[str, str, str]]) -> list[str]:
    """One line per (judge, prompt family, criterion) of a configured judge whose family its live calls never use."""
    lines = []
    for judge, family, criterion in cells:
        live = live_prompt_families(pool, judge, criterion)
        if live and family not in live:
            lines.append(
                f"{judge} / {family} / {criterion}: {judge!r} is a configured judge whose live calls for {criterion} "
                f"are asked under prompt family {' or '.join(repr(f) for f in live)}, so these thresholds never serve "
                f'its live verdicts (only verdicts sent with prompt_family {family!r}); set "prompt_family": '
                f"{live[0]!r} in the labelled rows if they are answers to the service's own prompt"
            )
    return lines
