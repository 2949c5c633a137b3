"""Draw the stratified sample behind golden_replies.jsonl (run by hand; the labels were added by reading).

``python -m tests.judges.golden_sample [DATA_DIR] > sample.jsonl`` prints the same 302 replies, in
the file's order, without labels. Strata are assigned by the first expression that matches (two_scores,
half, number_words, bare_final, none, else easy); within a stratum replies are drawn round-robin over
(judge, criterion) cells, each cell shuffled with ``random.Random(16)``.
"""

from __future__ import annotations

import json
import random
import re
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

SEED = 16
PER_STRATUM = 50
STRATA = ("easy", "half", "number_words", "bare_final", "two_scores", "none")
# The two real replies the parser refuses (two different scores read); always in the sample.
FORCED = frozenset({
    ("llama-2-70b-chat", "dm-test-46609841ffd23e9c22d1507edf7b176ecc4d834f/M9", "relevance"),
    ("llama-2-7b-chat", "dm-test-9b1af0f993d78353ebd56a1b180e882e751527b3/M8", "fluency"),
})  # fmt: skip
_WORD = r"(?:one|two|three|four|five)"
_SCORE_LIKE = re.compile(
    r"(?<![\d.])([1-5](?:\.5)?)(?![\d])\s*(?:/\s*5\b|out of (?:5|five)\b)|"
    r"\b(?:score|rating|rate[sd]?|grade)\b[^.\n\d]{0,25}?(?<![\d.])([1-5](?:\.5)?)(?![\d/-])",
    re.IGNORECASE,
)
_HALF = re.compile(r"(?<![\d.])[1-4]\.5(?!\d)")
_WORDS = re.compile(
    rf"\b(?:a|an|score of|scores?|scoring|rating of|rate it|give it|as)\s+(?:a\s+|an\s+)?{_WORD}\b"
    rf"|\b{_WORD}\s+out\s+of\s+(?:five|5)\b",
    re.IGNORECASE,
)
_BARE_END = re.compile(r"(?:[\n:.!?])[\s*#]*(?<![\d.])[1-5](?:\.5)?[*\s]*\.?\s*$")


def stratum(reply: str) -> str:
    """The stratum of one reply (the first rule that matches, in the order of the module docstring)."""
    values = {float(a or b) for a, b in _SCORE_LIKE.findall(reply)}
    if len(values) >= 2:
        return "two_scores"
    if _HALF.search(reply):
        return "half"
    if _WORDS.search(reply):
        return "number_words"
    if _BARE_END.search(reply):
        return "bare_final"
    return "easy" if values else "none"


def _replies(data_dir: Path) -> Iterator[tuple[str, dict]]:
    for path in sorted((data_dir / "judges" / "summeval").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if row.get("response") is not None:
                yield path.stem, row


def _key(drawn: tuple[str, dict]) -> tuple[str, str, str]:
    return drawn[0], drawn[1]["item_id"], drawn[1]["criterion"]


def draw(data_dir: Path) -> list[dict]:
    """The sample: PER_STRATUM replies per stratum (plus FORCED), as dicts without labels."""
    cells: dict[str, dict[tuple[str, str], list]] = defaultdict(lambda: defaultdict(list))
    for judge, row in _replies(data_dir):
        cells[stratum(row["response"])][(judge, row["criterion"])].append((judge, row))
    rng = random.Random(SEED)
    sample = []
    for name in STRATA:
        forced = [x for cell in cells[name].values() for x in cell if _key(x) in FORCED]
        pools = []
        for key in sorted(cells[name]):
            pool = [x for x in cells[name][key] if _key(x) not in FORCED]
            rng.shuffle(pool)
            pools.append(pool)
        picked, turn = list(forced), 0
        while len(picked) < PER_STRATUM + len(forced) and any(pools):
            if pools[turn % len(pools)]:
                picked.append(pools[turn % len(pools)].pop())
            turn += 1
        sample += [
            {"judge": j, "criterion": r["criterion"], "item_id": r["item_id"], "stratum": name, "reply": r["response"]}
            for j, r in picked
        ]
    return sample


if __name__ == "__main__":
    from tests.conftest import resolve_data_dir  # DATA_DIR, else ../shared/data beside the checkout

    root = Path(sys.argv[1]) if len(sys.argv) > 1 else resolve_data_dir()
    for item in draw(root):
        print(json.dumps(item, ensure_ascii=False))
