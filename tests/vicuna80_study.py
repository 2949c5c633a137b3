"""The Vicuna80 study run once per test session (the offline and the service tests compare against it)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from offline.build.answers.ingest import Vicuna80Ingest, ingest_vicuna80
from offline.build.answers.store import AnswerStore
from offline.build.inputs.vicuna80 import Vicuna80, load_vicuna80
from offline.studies.vicuna80.results import Vicuna80Summary
from offline.studies.vicuna80.study import run_vicuna80_study
from offline.studies.vicuna80.verdicts import Vicuna80Verdict, verdicts_from_store


@cache
def vicuna80_study(data_dir: Path) -> tuple[Vicuna80, Vicuna80Ingest, list[Vicuna80Verdict], Vicuna80Summary]:
    """(data, ingest counts, verdicts read back from an in-memory answer store, the study's summary)."""
    data = load_vicuna80(data_dir)
    with AnswerStore(":memory:") as store:
        ingested = ingest_vicuna80(store, data)
        verdicts, rules = verdicts_from_store(store)
    summary = run_vicuna80_study(data, verdicts, ingested.judges, rules, source="tests")
    return data, ingested, verdicts, summary
