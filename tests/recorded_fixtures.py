"""Session-wide reads of the shipped recorded answers, shared by every test that only reads them (a plugin of
tests/conftest.py, so the offline and research tests share one ingest per test process).

Ingesting the recorded judges (parsing ~19,000 free-text replies into an answer store) takes 4-6 s; eight test
modules each did it for themselves with the same inputs and the same code, so it now runs once per test process
(each pytest-xdist worker of ``make test``), and both kinds of read come from that one store. The results are made
read-only (every numpy array non-writeable, tuples and frozen structs otherwise), so a test or a study that wrote
into them would fail loudly instead of leaking into another module. What ingest does is tested on its own store in
``test_ingest.py``; ``make calibrate``'s own ingest in ``test_cli.py``.
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

import numpy as np
import pytest

from offline.build.answers.ingest import ingest_recorded
from offline.build.answers.store import AnswerStore
from offline.build.cell_data import JudgeCriterionData, cell_data_from_store
from offline.build.inputs.summeval import load_summeval
from offline.studies.tournaments.position_bias import PairwiseAnswer, pairwise_answers_from_store


def _read_only(cell: JudgeCriterionData) -> JudgeCriterionData:
    for field in dataclasses.fields(cell):
        value = getattr(cell, field.name)
        if isinstance(value, np.ndarray):
            value.flags.writeable = False
    return cell


@pytest.fixture(scope="session")
def _recorded(data_dir: Path) -> tuple[tuple[JudgeCriterionData, ...], tuple[PairwiseAnswer, ...]]:
    """One ingest of the recorded judges serves both reads below: ``offline.validation.artifact.recorded_datasets``'s
    steps (ingest into a temporary answer store, then ``cell_data_from_store``, as ``make calibrate`` reads them), and
    the pairwise verdicts read back from the same store (both reads are in store key order, so which store the verdicts
    come from changes nothing)."""
    summeval = load_summeval(data_dir)
    with tempfile.TemporaryDirectory() as folder, AnswerStore(Path(folder) / "answers.sqlite") as store:
        ingest_recorded(store, data_dir)
        cells = tuple(_read_only(cell) for cell in cell_data_from_store(store, summeval.items))
        return cells, tuple(pairwise_answers_from_store(store))


@pytest.fixture(scope="session")
def recorded_cells(_recorded) -> tuple[JudgeCriterionData, ...]:
    """Every recorded SummEval judge x criterion as study arrays (what ``offline.validation.artifact.recorded_datasets``
    returns)."""
    return _recorded[0]


@pytest.fixture(scope="session")
def recorded_pairwise(_recorded) -> tuple[PairwiseAnswer, ...]:
    """The shipped pairwise verdicts read back from the ingested answer store (frozen structs)."""
    return _recorded[1]
