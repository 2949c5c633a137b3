"""Session-wide reads of the shipped recorded answers, shared by the offline tests that only read them.

Ingesting the recorded judges (parsing ~19,000 free-text replies into an answer store) takes 4-6 s; eight test
modules each did it for themselves with the same inputs and the same code, so it now runs once per test process
(each pytest-xdist worker of ``make test``) per kind of read. The results are made read-only (every numpy array
non-writeable, tuples and frozen structs otherwise), so a test or a study that wrote into them would fail loudly
instead of leaking into another module. What ingest does is tested on its own store in ``test_ingest.py``;
``make calibrate``'s own ingest in ``test_cli.py``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from offline.ingest import ingest_recorded
from offline.store import AnswerStore
from offline.studies.cell_data import JudgeCriterionData
from offline.studies.position_bias import PairwiseAnswer, pairwise_answers_from_store
from offline.validate import recorded_datasets


def _read_only(cell: JudgeCriterionData) -> JudgeCriterionData:
    for field in dataclasses.fields(cell):
        value = getattr(cell, field.name)
        if isinstance(value, np.ndarray):
            value.flags.writeable = False
    return cell


@pytest.fixture(scope="session")
def recorded_cells(data_dir: Path) -> tuple[JudgeCriterionData, ...]:
    """Every recorded SummEval judge x criterion as study arrays: ``offline.validate.recorded_datasets`` (ingest
    into a temporary answer store, then ``cell_data_from_store``, as ``make calibrate`` reads them)."""
    return tuple(_read_only(cell) for cell in recorded_datasets(data_dir))


@pytest.fixture(scope="session")
def recorded_pairwise(data_dir: Path) -> tuple[PairwiseAnswer, ...]:
    """The shipped pairwise verdicts read back from an ingested in-memory answer store (frozen structs)."""
    with AnswerStore(":memory:") as store:
        ingest_recorded(store, data_dir)
        return tuple(pairwise_answers_from_store(store))
