"""A detector of likely prompt injection in texts a judge will read (documents, summaries, candidates).

``injection_findings(text) -> list[str]`` names the rules a text trips (empty: nothing found). The rules are
patterns, not a model; each targets what an evaluated text has no business containing:

=============================== ==================================================================================
rule                            what it looks for
=============================== ==================================================================================
``override_instructions``       "ignore / disregard / forget / override ... (previous|above|prior|earlier|all|
                                system|your) instructions|prompt|rules|guidelines"
``addresses_the_judge``         words aimed at the evaluating model: "you are an AI / the judge", "as the
                                evaluator", "dear grader", "note to the AI", "(evaluator|judge|grader|AI|model|
                                assistant) (must|should|will|is to) (rate|score|give|answer|output|return)"
``dictates_the_score``          an order to score: "(answer|respond|reply|output|return|print|rate|score|grade|
                                give) ... (with|as)? (a|the)? (score|rating|grade)? (of)? 5" and "(this|the)
                                (summary|text|answer|response|candidate) (deserves|should (get|receive|be
                                given|be rated|be scored)|must (get|receive|be rated)) ... 5", or "rate it 5"
``score_statement_line``        a line that is a bare verdict in the judge's own reply format: "Score: 5",
                                "Final rating = 4/5", "Answer: A", "Verdict: B"
``chat_markup``                 chat-template or role markers: "<|im_start|>", "[INST]", "<<SYS>>", "</s>",
                                "### System:", a line starting "system:" / "assistant:"
=============================== ==================================================================================

Scope: English text. A text that reports scores (match results, ratings inside a review, "rated 4 out of 5
stars") does not trip ``score_statement_line`` unless a whole line is nothing but such a verdict. The rates on
the corpus under ``tests/service/injection_corpus.json`` (attacks and benign texts that mention scores and
instructions legitimately) are measured by ``tests/service/test_injection.py`` and stated in the README.
"""

from __future__ import annotations

import re

import msgspec

from service.policy import PolicyDecision

__all__ = [
    "INJECTION_FLAG", "RULES", "SCREEN_MEMO_LIMIT", "escalate_for_injection", "injection_findings", "screen_texts",
]

INJECTION_FLAG = "possible_prompt_injection"
_I = re.IGNORECASE
_IM = re.IGNORECASE | re.MULTILINE
_JUDGE = r"(?:ai|a\.i\.|assistant|judge|evaluator|grader|rater|reviewer model|language model|llm|model|chatbot|bot)"
_SCORE = (
    r"(?:[1-9]|10|one|two|three|four|five|a perfect score|full marks"
    r"|the (?:highest|maximum|top|best) (?:score|rating|mark|grade))"
)

RULES: dict[str, re.Pattern[str]] = {
    "override_instructions": re.compile(
        r"\b(?:ignore|disregard|forget|override|bypass|skip|abandon|drop)\b[^.\n]{0,40}?\b"
        r"(?:previous|preceding|above|prior|earlier|all|any|the|system|your|those|these|original|other)\b"
        r"[^.\n]{0,30}?\b(?:instructions?|prompts?|rules|guidelines|directions|directives|rubric|criteria|"
        r"evaluation steps|task)\b",
        _I,
    ),
    "addresses_the_judge": re.compile(
        r"\byou are (?:now |actually )?(?:an? |the )?(?:[a-z]+ )?" + _JUDGE + r"\b"
        r"|\b(?:as|dear|hey|attention|note to|message (?:to|for)|instructions? (?:to|for)) (?:the |an? |any |all )?"
        + _JUDGE + r"s?\b"
        r"|\b(?:the |any |all )?" + _JUDGE + r"s? (?:must|should|shall|will|is to|are to|has to|needs to) "
        r"(?:now )?(?:rate|score|grade|give|assign|answer|output|return|respond|reply|prefer|pick|choose|select)\b"
        r"|\b(?:when|while|before) (?:you |you're |you are )?(?:evaluat|scor|grad|rat|judg|assess|review)"
        r"(?:e|es|ed|ing)? (?:this|the following|these)\b",
        _I,
    ),
    "dictates_the_score": re.compile(
        r"\b(?:answer|respond|reply|output|return|print|say|write|rate|score|grade|give|assign|award|mark)"
        r"(?: (?:it|this|this one|me|us|them|(?:the|this) (?:summary|text|answer|response|candidate|output)))?"
        r"(?: only)?(?: with| as| a| an| the| it)*(?: (?:score|rating|grade|mark|verdict))?(?: of)? "
        r"(?:" + _SCORE + r"|['\"]?[abc]['\"]?)(?![.,]?\d)(?:\s*/\s*(?:5|10))?(?: out of (?:5|five|10|ten))?"
        r"(?=\s*(?:[.!,;:)\n]|$| and| or| regardless| no matter| whatever| immediately| now| only| please))"
        r"|\b(?:this|the|my|our) (?:summary|text|answer|response|candidate|output|essay|submission)"
        r" (?:deserves|merits|earns|should (?:get|receive|be given|be rated|be scored|score)|must (?:get|receive|be "
        r"given|be rated|be scored|score)|is to be (?:rated|scored|given))(?: a| an| the)?(?: (?:score|rating|grade))?"
        r"(?: of)? " + _SCORE + r"\b",
        _I,
    ),
    "score_statement_line": re.compile(
        r"(?:^|(?<=[.!?])[ \t]+)[ \t>*#_-]*(?:final |overall |total )?(?:score|rating|grade|mark|evaluation|answer|"
        r"verdict|result|"
        r"judgement|judgment)[ \t]*(?:is)?[ \t]*[:=][ \t]*(?:[1-5](?:\.0)?(?:[ \t]*/[ \t]*(?:5|10))?|[abc])"
        r"[ \t]*[.!*_]*[ \t]*$",
        _IM,
    ),
    "chat_markup": re.compile(
        r"<\|(?:im_start|im_end|system|user|assistant|endoftext|eot_id|start_header_id)\|>|\[/?INST\]|<<SYS>>|</s>"
        r"|^[ \t]*#{2,}[ \t]*(?:system|instruction|assistant)s?\b[ \t]*:?|^[ \t]*(?:system|assistant)[ \t]*:",
        _IM,
    ),
}


SCREEN_MEMO_LIMIT = 64  # most texts one scoring context remembers (screen_texts)


def injection_findings(text: str | None) -> list[str]:
    """The names of the rules (``RULES``, in table order) that ``text`` trips; [] for None or nothing found."""
    if not text:
        return []
    return [name for name, pattern in RULES.items() if pattern.search(text)]


def screen_texts(texts: dict[str, str | None], memo: dict[str, list[str]] | None = None) -> list[str]:
    """``["<field>: <rule>", ...]`` for every named text that trips a rule (field order kept).

    ``memo`` (text -> its rules), when given, is read before screening a text and keeps up to
    SCREEN_MEMO_LIMIT texts: a scoring context passes its own, so items sharing a document screen it once."""
    findings = []
    for field, text in texts.items():
        if not text:
            continue
        rules = memo.get(text) if memo is not None else None
        if rules is None:
            rules = injection_findings(text)
            if memo is not None and len(memo) < SCREEN_MEMO_LIMIT:
                memo[text] = rules
        findings += [f"{field}: {rule}" for rule in rules]
    return findings


def escalate_for_injection(decision: PolicyDecision, findings: list[str]) -> PolicyDecision:
    """``decision`` turned into ``escalate``, its reason saying which texts tripped which rules."""
    return msgspec.structs.replace(
        decision, decision="escalate", escalate=True,
        reason=f"{decision.reason}; escalated: possible prompt injection in the judged text ({', '.join(findings)})",
    )
