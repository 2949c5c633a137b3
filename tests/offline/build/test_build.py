"""The build's entry point (``make artifact``: ``python -m offline build``) on the real data: both artifacts written
and valid, the pairwise one byte for byte the shipped one, and the SummEval cells' fits, defaults and rules the
shipped artifact's.

The data directory is the real one with two recorded judges (one with log-probs, one without) and without the
recorded sentence fact-checks, so the build runs in a test's time; 2 splits instead of 20 change only the held-out
figures: thresholds, defaults (chosen by cross-fitting on all items) and rules are fitted on all items.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import numpy as np
import pytest

from artifact.pairwise import DEFAULT_PATH as SHIPPED_PAIRWISE
from artifact.pairwise import load_pairwise_artifact
from artifact.thresholds import load_artifact
from offline.build.artifact_stability import same_within
from offline.build.build import build_artifacts
from offline.build.export import DEFAULT_THRESHOLDS

JUDGES = ("gpt-4o-mini-2024-07-18", "llama-2-13b-chat")


def _link_all(source: Path, target: Path, *, skip: tuple[str, ...] = ()) -> None:
    target.mkdir(parents=True, exist_ok=True)
    for path in source.iterdir():
        if path.name not in skip:
            (target / path.name).symlink_to(path)


@pytest.fixture(scope="module")
def two_judges(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real data directory with only ``JUDGES`` among the recorded SummEval judges and no sentence fact-checks."""
    root = tmp_path_factory.mktemp("data")
    _link_all(data_dir, root, skip=("judges", "frank"))
    _link_all(data_dir / "frank", root / "frank", skip=("llm",))
    _link_all(data_dir / "judges", root / "judges", skip=("summeval",))
    judges = root / "judges" / "summeval"
    judges.mkdir()
    (judges / "judges.json").symlink_to(data_dir / "judges" / "summeval" / "judges.json")
    for judge in JUDGES:
        (judges / f"{judge}.jsonl").symlink_to(data_dir / "judges" / "summeval" / f"{judge}.jsonl")
    return root


@pytest.fixture(scope="module")
def built(two_judges: Path, tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("built")
    return build_artifacts(
        data_dir=two_judges,
        store_path=out / "answers.sqlite",
        thresholds_path=out / "thresholds.json",
        pairwise_path=out / "pairwise_decisions.json",
        n_splits=2,
        seed=0,
        progress=False,
    )


def _without_p_values(rules) -> tuple[list, list[float]]:
    """(the rules as builtins without their skill test's p-value, those p-values)."""
    plain = msgspec.to_builtins(rules)
    return plain, [rule["skill"].pop("p_value") for rule in plain]


def test_the_pairwise_artifact_is_the_shipped_one(built) -> None:
    assert built.pairwise.read_bytes() == SHIPPED_PAIRWISE.read_bytes()
    assert load_pairwise_artifact(built.pairwise).entries  # valid, and not empty


def test_the_summeval_cells_are_fitted_as_shipped_in_both_modes(built) -> None:
    fresh, shipped = load_artifact(built.thresholds), load_artifact(DEFAULT_THRESHOLDS)
    assert {e.judge for e in fresh.entries} == set(JUDGES)  # no panel: its members are not all in the data
    assert {e.mode for e in fresh.entries} == {"pac", "expected"}
    assert all(e.n_splits == 2 for e in fresh.entries)
    shipped_entries = {e.key: e for e in shipped.entries if e.judge in JUDGES}
    assert {e.key for e in fresh.entries} == set(shipped_entries)
    for entry in fresh.entries:  # the same fit, up to the last bits another machine kind moves (1e-12)
        assert same_within(entry.fitted, shipped_entries[entry.key].fitted), entry.key

    def defaults(artifact):
        return sorted((d.judge, d.criterion, d.input_kind, d.mode, d.method) for d in artifact.default_methods)

    assert defaults(fresh) == [d for d in defaults(shipped) if d[0] in JUDGES]
    assert same_within(fresh.decision_rules, [r for r in shipped.decision_rules if r.judge in JUDGES])
    # the per-label rules: the same, but for the skill test's p-value, whose last digits SciPy's Wilcoxon moves
    # between machines (1e-6 here), so it is compared at 1e-4
    fresh_rules, shipped_rules = (
        _without_p_values(fresh.label_rules),
        _without_p_values([r for r in shipped.label_rules if r.judge in JUDGES]),
    )
    assert same_within(fresh_rules[0], shipped_rules[0])
    assert np.allclose(fresh_rules[1], shipped_rules[1], rtol=0, atol=1e-4)
    assert len(built.fits) == len({(e.judge, e.criterion, e.input_kind) for e in fresh.entries})
    assert built.sentence_fits == {} and built.faithfulness is None and built.sentence_stats == []
