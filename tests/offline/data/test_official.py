"""SummEval's official annotation format, checked against the shipped items on the sample files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from offline.build.inputs.errors import DataError
from offline.build.inputs.summeval import CRITERIA, SummEval, load_summeval
from tests.offline.reference.official import load_official


@pytest.fixture(scope="module")
def sample_paths(data_dir: Path) -> list[Path]:
    paths = sorted((data_dir / "summeval" / "official_format_sample").glob("*.jsonl"))
    assert [p.name for p in paths] == ["M22_outputs_annotations.jsonl", "M8_outputs_annotations.jsonl"]
    return paths


@pytest.fixture(scope="module")
def official(sample_paths: list[Path]) -> SummEval:
    return load_official(sample_paths)


def test_sample_matches_shipped_items(official: SummEval, data_dir: Path) -> None:
    shipped = load_summeval(data_dir)
    by_id = shipped.items_by_id()
    assert len(official.items) == 200
    assert {item.system_id for item in official.items} == {"M8", "M22"}
    for item in official.items:
        # id = doc id, model_id = system: the item id maps onto items.jsonl
        reference = by_id[f"{item.doc_id}/{item.system_id}"]
        assert item.item_id == reference.item_id
        for criterion in CRITERIA:
            assert item.expert_mean[criterion] == pytest.approx(reference.expert_mean[criterion], abs=1e-12)
        assert item.expert_scores == reference.expert_scores
        assert item.summary == reference.summary
    assert set(official.articles) == set(shipped.articles)
    for doc_id, article in official.articles.items():
        assert article.article == shipped.articles[doc_id].article
        assert article.references == shipped.articles[doc_id].references


def test_expert_mean_computed_from_annotations(sample_paths: list[Path], official: SummEval) -> None:
    raw = json.loads(sample_paths[0].read_text().splitlines()[0])
    first = official.items[0]
    assert first.doc_id == raw["id"] and first.system_id == raw["model_id"]
    for criterion in CRITERIA:
        ratings = [a[criterion] for a in raw["expert_annotations"]]
        assert first.expert_mean[criterion] == sum(ratings) / len(ratings)


def _official_row(doc: str = "d1", model: str = "M8", **extra: object) -> dict[str, object]:
    row = {
        "id": doc,
        "model_id": model,
        "decoded": "summary",
        "references": ["r"],
        "text": "article",
        "expert_annotations": [dict.fromkeys(CRITERIA, 3), dict.fromkeys(CRITERIA, 4)],
        "turker_annotations": [],
    }
    row.update(extra)
    return row


def _write(path: Path, rows: list[object]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_two_annotators_and_single_path(tmp_path: Path) -> None:
    loaded = load_official(_write(tmp_path / "a.jsonl", [_official_row()]))
    assert loaded.items[0].expert_mean == dict.fromkeys(CRITERIA, 3.5)
    assert loaded.items[0].item_id == "d1/M8"


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("{not json", "malformed JSON"),
        (_official_row(model="M9", expert_annotations=[{"coherence": 3}]), "lacks the criterion"),
        (
            _official_row(model="M9", expert_annotations=[{**dict.fromkeys(CRITERIA, 3), "wit": 2}]),
            "unknown criterion 'wit'",
        ),
        (_official_row(model="M9", expert_annotations=[dict.fromkeys(CRITERIA, 0)]), "outside 1..5"),
        (_official_row(model="M9", expert_annotations=[]), "expert_annotations is empty"),
        (_official_row(), "duplicate item"),
        (_official_row(model="M9", text="another text"), "different text"),
        (_official_row(model="M9", text=None), "use the paired file"),
    ],
)
def test_bad_rows(tmp_path: Path, bad: object, message: str) -> None:
    path = _write(tmp_path / "official.jsonl", [_official_row(), bad])
    with pytest.raises(DataError) as caught:
        load_official(path)
    assert str(caught.value).startswith(f"{path}:2: ")
    assert message in str(caught.value)


def test_articles_optional_when_allowed(tmp_path: Path) -> None:
    path = _write(tmp_path / "o.jsonl", [_official_row(text=None), _official_row("d2")])
    loaded = load_official(path, require_articles=False)
    assert [item.item_id for item in loaded.items] == ["d1/M8", "d2/M8"]
    assert set(loaded.articles) == {"d2"}
