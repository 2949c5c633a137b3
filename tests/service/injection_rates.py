"""Detection and false-positive rates of ``service.screening.injection`` on a corpus: the held-out one by default.

``PYTHONPATH=$PWD python -m tests.service.injection_rates`` prints the rates on the held-out corpus
(``injection_heldout.json``: hand-written attacks and benign texts, plus every real article and SummEval reference
summary of the shared data directory as benign texts); ``--corpus heldout2`` the second held-out corpus (with every
distinct FRANK system and reference summary as real benign texts); ``--corpus dev`` or ``--corpus rules`` measures the
development corpus (with every Vicuna80 question and answer of the shared data as real benign texts) or the rules'
own corpus (no real texts added). ``--by-kind`` adds counts per kind
(the corpora's ``kind`` field); ``--detail`` lists misses and false positives: use it on the dev and rules corpora
only, never on the held-out one before its figures are recorded (that would tune the rules on it).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).parent
CORPORA = {
    "heldout": HERE / "injection_heldout.json",
    "heldout2": HERE / "injection_heldout2.json",
    "dev": HERE / "injection_dev.json",
    "rules": HERE / "injection_corpus.json",
}


@dataclass(frozen=True)
class Rates:
    """Counts of one corpus: attacks caught, benign texts flagged (hand-written and real), and which."""

    attacks: int
    caught: int
    benign_written: int
    flagged_written: int
    benign_real: int
    flagged_real: int
    missed: list[str] = field(default_factory=list)
    false_positives: list[str] = field(default_factory=list)

    @property
    def detection(self) -> float:
        """Share of attacks with at least one finding."""
        return self.caught / self.attacks

    @property
    def false_positive_written(self) -> float:
        """Share of hand-written benign texts with a finding."""
        return self.flagged_written / self.benign_written

    @property
    def false_positive_real(self) -> float:
        """Share of real news texts (articles, reference summaries) with a finding; 0 when none were loaded."""
        return self.flagged_real / self.benign_real if self.benign_real else 0.0


def _texts(entries: list) -> list[str]:
    return [entry["text"] if isinstance(entry, dict) else entry for entry in entries]


def real_news_texts(data_dir: Path) -> Iterator[str]:
    """Every SummEval article and reference summary and every FRANK article of the shared data directory."""
    with (data_dir / "summeval" / "articles.jsonl").open(encoding="utf-8") as rows:
        for line in rows:
            row = json.loads(line)
            yield row["article"]
            yield from row["references"]
    with (data_dir / "frank" / "articles.jsonl").open(encoding="utf-8") as rows:
        for line in rows:
            yield json.loads(line)["article"]


def real_frank_summaries(data_dir: Path) -> Iterator[str]:
    """Every distinct FRANK system summary and reference summary (frank/items.jsonl): the second held-out corpus'."""
    seen: set[str] = set()
    with (data_dir / "frank" / "items.jsonl").open(encoding="utf-8") as rows:
        for line in rows:
            row = json.loads(line)
            for text in (row["summary"], row["reference"]):
                if text not in seen:
                    seen.add(text)
                    yield text


def real_dev_texts(data_dir: Path) -> Iterator[str]:
    """Every Vicuna80 question and assistant answer of the shared data directory (the dev corpus' real texts)."""
    with (data_dir / "pairwise" / "vicuna80" / "items.jsonl").open(encoding="utf-8") as rows:
        for line in rows:
            row = json.loads(line)
            yield row["question"]
            yield from row["answers"].values()


def measure(corpus: Path, detector: Callable[[str], list[str]], real: list[str] | None = None) -> Rates:
    """The rates of ``detector`` on ``corpus`` (attacks + benign), with ``real`` texts counted as benign too."""
    data = json.loads(corpus.read_text(encoding="utf-8"))
    attacks, benign = _texts(data["attacks"]), _texts(data["benign"])
    missed = [text for text in attacks if not detector(text)]
    flagged = [text for text in benign if detector(text)]
    flagged_real = [text for text in real or [] if detector(text)]
    return Rates(
        attacks=len(attacks),
        caught=len(attacks) - len(missed),
        benign_written=len(benign),
        flagged_written=len(flagged),
        benign_real=len(real or []),
        flagged_real=len(flagged_real),
        missed=missed,
        false_positives=flagged + flagged_real,
    )


def main(argv: list[str] | None = None) -> None:
    """Print the rates of the current rules on one corpus."""
    from service.screening.injection import injection_findings
    from tests.conftest import resolve_data_dir

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", choices=sorted(CORPORA), default="heldout")
    parser.add_argument("--detail", action="store_true", help="list misses and false positives (not on heldout)")
    parser.add_argument("--by-kind", action="store_true", help="count attacks caught and benign texts flagged per kind")
    args = parser.parse_args(argv)
    sources = {"heldout": real_news_texts, "heldout2": real_frank_summaries, "dev": real_dev_texts}
    real = list(sources[args.corpus](resolve_data_dir())) if args.corpus in sources else None
    rates = measure(CORPORA[args.corpus], injection_findings, real)
    print(
        f"corpus {args.corpus}: attacks caught {rates.caught}/{rates.attacks} ({rates.detection:.1%}); "
        f"hand-written benign flagged {rates.flagged_written}/{rates.benign_written} "
        f"({rates.false_positive_written:.1%}); real texts flagged {rates.flagged_real}/{rates.benign_real} "
        f"({rates.false_positive_real:.2%})"
    )
    if args.by_kind:
        data = json.loads(CORPORA[args.corpus].read_text(encoding="utf-8"))
        for part, wanted in (("attacks", True), ("benign", False)):
            counts: dict[str, list[int]] = {}
            for entry in data[part]:
                hit = bool(injection_findings(entry["text"]))
                counts.setdefault(entry["kind"], [0, 0])[0] += hit
                counts[entry["kind"]][1] += 1
            label = "caught" if wanted else "flagged"
            print(f"{part} {label} by kind: " + ", ".join(f"{k} {c}/{n}" for k, (c, n) in sorted(counts.items())))
    if args.detail:
        for text in rates.missed:
            print("MISSED  ", ascii(text)[:160])
        for text in rates.false_positives:
            print("FLAGGED ", ascii(text)[:160])


if __name__ == "__main__":
    main()
