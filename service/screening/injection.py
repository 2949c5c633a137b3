"""A detector of likely prompt injection in texts a judge will read (documents, summaries, candidates).

``injection_findings(text) -> list[str]`` names the rules (``service.screening.injection_rules``) a text trips
(empty: nothing found), each matched against the views of the text (``service.screening.text_views``);
``screen_texts`` screens the named texts of one item.

Scope and honesty: these are patterns; an attacker who paraphrases beyond them is not caught, and a text that
quotes an attack (a news story about prompt injection) is flagged. The rates on the rules' own corpus
(``tests/service/injection_corpus.json``), on the development corpus the rules were tuned on
(``injection_dev.json``) and on the held-out corpora they were not tuned on (``injection_heldout*.json``) are
stated in ``docs/prompt-injection.md`` and held by ``tests/service/screening/test_injection.py``. Whatever the detector
misses, the fence (``judges.prompts.untrusted``) still keeps the text inside its markers.
"""

from __future__ import annotations

from typing import Protocol

from service.screening.injection_rules import RULES, Check
from service.screening.text_views import TextViews, View, text_views

__all__ = ["INJECTION_FLAG", "SCREEN_MEMO_LIMIT", "FindingsMemo", "injection_findings", "screen_texts"]

INJECTION_FLAG = "possible_prompt_injection"


def _trips(check: Check, views: TextViews) -> bool:
    """Whether ``check`` matches any view of its kind whose gate is open."""
    candidates = {
        "latin": views.latin,
        "script": views.script,
        "hidden": views.hidden,
        "hidden+clean": views.hidden_clean,
    }[check.views]
    return any(_gate_open(check, view) and check.pattern.search(view.text) for view in candidates)


def _gate_open(check: Check, view: View) -> bool:
    """Whether ``view`` holds one of the words and substrings ``check`` needs (when it names any)."""
    if check.needs and not any(needed in view.text for needed in check.needs):
        return False
    return not check.words or not check.words.isdisjoint(view.words)


SCREEN_MEMO_LIMIT = 64  # most texts one scoring context remembers (screen_texts)


def injection_findings(text: str | None) -> list[str]:
    """The names of the rules (``RULES``, in table order) that ``text`` trips in any of its views; [] for none."""
    if not text:
        return []
    views = text_views(text)
    return [name for name, checks in RULES.items() if any(_trips(check, views) for check in checks)]


class FindingsMemo(Protocol):
    """Text -> the rules it trips, remembered by whoever holds it (``service.caching.screen_memo.ScreenMemo``)."""

    def get(self, text: str) -> list[str] | None: ...

    def __setitem__(self, text: str, rules: list[str]) -> None: ...


def screen_texts(texts: dict[str, str | None], memo: dict[str, list[str]] | FindingsMemo | None = None) -> list[str]:
    """``["<field>: <rule>", ...]`` for every named text that trips a rule (field order kept).

    ``memo`` (text -> its rules), when given, is read before screening a text and written after: a plain dict keeps
    up to SCREEN_MEMO_LIMIT texts, a memo that bounds itself (the process's ``ScreenMemo``, an LRU) takes each."""
    findings = []
    for field, text in texts.items():
        if not text:
            continue
        rules = memo.get(text) if memo is not None else None
        if rules is None:
            rules = injection_findings(text)
            if memo is not None and not (isinstance(memo, dict) and len(memo) >= SCREEN_MEMO_LIMIT):
                memo[text] = rules
        findings += [f"{field}: {rule}" for rule in rules]
    return findings
