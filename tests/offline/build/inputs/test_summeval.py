"""SummEval loader, the human-target rule and the data-directory resolution, on the real files and bad ones."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

from calibration.errors import ScoreOutOfRangeError
from offline.build.inputs.errors import DataError
from offline.build.inputs.summeval import CRITERIA, SummEval, human_target, load_summeval
from offline.data.paths import resolve_data_dir


@pytest.fixture(scope="module")
def summeval(data_dir: Path) -> SummEval:
    return load_summeval(data_dir)


def write_jsonl(path: Path, rows: list[object]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows))
    return path


def _item(doc: str, system: str, mean: float = 3.0) -> dict[str, object]:
    return {
        "item_id": f"{doc}/{system}",
        "doc_id": doc,
        "system_id": system,
        "summary": "s",
        "expert_mean": dict.fromkeys(CRITERIA, mean),
        "expert_scores": None,
    }


def _tiny_dir(tmp_path: Path, items: list[object]) -> Path:
    write_jsonl(tmp_path / "summeval" / "articles.jsonl", [{"doc_id": "d1", "article": "text", "references": ["r"]}])
    write_jsonl(tmp_path / "summeval" / "items.jsonl", items)
    return tmp_path


def test_real_counts_and_alignment(summeval: SummEval, data_dir: Path) -> None:
    assert len(summeval.items) == 1600
    assert len(summeval.articles) == 100
    assert len({item.item_id for item in summeval.items}) == 1600
    assert len(summeval.doc_ids()) == 100
    per_doc: dict[str, int] = {}
    for item in summeval.items:
        assert item.doc_id in summeval.articles
        assert item.item_id == f"{item.doc_id}/{item.system_id}"
        assert set(item.expert_mean) == set(CRITERIA)
        per_doc[item.doc_id] = per_doc.get(item.doc_id, 0) + 1
    assert set(per_doc.values()) == {16}
    assert all(len(article.references) == 11 for article in summeval.articles.values())
    # file order kept: the first line of the file is the first item
    first = json.loads((data_dir / "summeval" / "items.jsonl").read_text().splitlines()[0])
    assert summeval.items[0].item_id == first["item_id"]


def test_expert_mean_is_mean_of_individual_scores(data_dir: Path, summeval: SummEval) -> None:
    # Independent check from the raw JSON, in exact arithmetic.
    raw = [json.loads(line) for line in (data_dir / "summeval" / "items.jsonl").read_text().splitlines()]
    with_scores = [row for row in raw if row["expert_scores"] is not None]
    assert len(with_scores) == 1200
    for row in with_scores:
        for criterion in CRITERIA:
            exact = Fraction(sum(s[criterion] for s in row["expert_scores"]), len(row["expert_scores"]))
            assert row["expert_mean"][criterion] == pytest.approx(float(exact), abs=1e-12)
    missing = {row["system_id"] for row in raw if row["expert_scores"] is None}
    assert missing == {"M0", "M1", "M2", "M5"}
    loaded = summeval.items_by_id()
    assert all(loaded[row["item_id"]].expert_mean == row["expert_mean"] for row in raw)


def test_human_target_rule() -> None:
    # Independent rule in exact arithmetic: floor(x + 1/2) over every k/3 and every half on 1..5.
    for value in {Fraction(k, 3) for k in range(3, 16)} | {Fraction(k, 2) for k in range(2, 11)}:
        assert human_target(float(value)) == int(value + Fraction(1, 2)), value
    assert human_target(2.5) == 3
    assert human_target(4.4999999999999) == 5  # float noise around a half counts as the half
    assert human_target(1.3333333333333333) == 1
    assert human_target(1.6666666666666667) == 2
    for bad in (0.5, 5.5, float("nan")):
        with pytest.raises(ScoreOutOfRangeError):
            human_target(bad)


def test_real_human_targets_on_scale(summeval: SummEval) -> None:
    targets = [human_target(item.expert_mean[c]) for item in summeval.items for c in CRITERIA]
    assert set(targets) <= {1, 2, 3, 4, 5}
    assert len(set(targets)) == 5


def test_malformed_line_names_file_and_line(tmp_path: Path) -> None:
    data = _tiny_dir(tmp_path, [_item("d1", "M1"), '{"item_id": "d1/M2", '])
    with pytest.raises(DataError) as caught:
        load_summeval(data)
    assert caught.value.path == data / "summeval" / "items.jsonl"
    assert caught.value.line == 2
    assert str(caught.value).startswith(f"{data / 'summeval' / 'items.jsonl'}:2: malformed JSON")


def test_unknown_criterion_names_file_and_line(tmp_path: Path) -> None:
    bad = _item("d1", "M2")
    bad["expert_mean"] = {**bad["expert_mean"], "elegance": 3.0}  # type: ignore[dict-item]
    data = _tiny_dir(tmp_path, [_item("d1", "M1"), bad])
    with pytest.raises(DataError, match=r"items\.jsonl:2: unknown criterion 'elegance'"):
        load_summeval(data)


def test_item_without_article(tmp_path: Path) -> None:
    data = _tiny_dir(tmp_path, [_item("d1", "M1"), _item("d1", "M2"), _item("d9", "M1")])
    with pytest.raises(DataError, match=r"items\.jsonl:3: doc_id 'd9' has no article") as caught:
        load_summeval(data)
    assert caught.value.line == 3


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda row: row.update(expert_mean=dict.fromkeys(CRITERIA, 6.0)), "outside 1..5"),
        (lambda row: row.update(item_id="d1/M7"), "is not '<doc_id>/<system_id>'"),
        (lambda row: row.update(expert_scores=[dict.fromkeys(CRITERIA, 1)] * 3), "differs from the mean"),
        (lambda row: row["expert_mean"].pop("fluency"), "lacks the criterion 'fluency'"),
        (lambda row: row.update(summary=5), "Expected `str`"),
    ],
)
def test_bad_item_values(tmp_path: Path, mutate, message: str) -> None:  # type: ignore[no-untyped-def]
    row = _item("d1", "M2")
    mutate(row)
    data = _tiny_dir(tmp_path, [_item("d1", "M1"), "", row])
    with pytest.raises(DataError, match=r"items\.jsonl:3: ") as caught:
        load_summeval(data)
    assert message in str(caught.value)


def test_duplicate_item(tmp_path: Path) -> None:
    data = _tiny_dir(tmp_path, [_item("d1", "M1"), _item("d1", "M1")])
    with pytest.raises(DataError, match=r"items\.jsonl:2: duplicate item_id"):
        load_summeval(data)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="articles.jsonl: file not found"):
        load_summeval(tmp_path)


def test_resolve_data_dir(tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import offline.data.paths as paths

    assert resolve_data_dir(tmp_path, env={}) == tmp_path
    assert resolve_data_dir(None, env={"DATA_DIR": str(tmp_path)}) == tmp_path
    # explicit beats the environment
    assert resolve_data_dir(data_dir, env={"DATA_DIR": str(tmp_path)}) == data_dir
    with pytest.raises(DataError, match="DATA_DIR"):
        resolve_data_dir(None, env={"DATA_DIR": str(tmp_path / "absent")})
    with pytest.raises(DataError, match="does not exist"):
        resolve_data_dir(tmp_path / "absent", env={})
    # without either: ../shared/data beside the checkout when it exists, else the checkout's .data (make data's
    # default target); the rule is checked on stand-ins for both places, wherever the data lies today
    shared, built = tmp_path / "shared" / "data", tmp_path / "checkout" / ".data"
    monkeypatch.setattr(paths, "SHARED_DATA_DIR", shared)
    monkeypatch.setattr(paths, "BUILT_DATA_DIR", built)
    assert paths.default_data_dir() == built
    with pytest.raises(DataError, match="make data"):
        paths.resolve_data_dir(None, env={})
    built.mkdir(parents=True)
    assert paths.resolve_data_dir(None, env={}) == built
    shared.mkdir(parents=True)
    assert paths.default_data_dir() == shared == paths.resolve_data_dir(None, env={})


def test_resolve_data_dir_says_what_to_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import offline.data.paths as paths

    monkeypatch.setattr(paths, "default_data_dir", lambda: tmp_path / "nowhere")
    with pytest.raises(DataError, match="set the environment variable DATA_DIR"):
        paths.resolve_data_dir(None, env={})
