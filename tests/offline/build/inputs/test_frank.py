"""offline.build.inputs.frank: row counts and alignment on the real files; validation on small hand-made files."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from offline.build.inputs.errors import DataError
from offline.build.inputs.frank import (
    CATEGORY_COLUMNS,
    Frank,
    FrankDataError,
    baseline_scores,
    load_frank,
)

PUBLISHED_METRICS = ("FactCC", "BertScore P Art", "QAGS")


@pytest.fixture(scope="module")
def frank(data_dir: Path) -> Frank:
    return load_frank(data_dir)


# ------------------------------------------------------------------------------------------ real files


def test_real_files_row_counts(frank: Frank) -> None:
    assert len(frank.items) == 2246
    assert len(frank.articles) == 499
    assert len(frank.baselines) == 2246
    assert len(set(frank.item_keys())) == 2246
    assert Counter(item.dataset for item in frank.items) == {"cnndm": 1250, "bbc": 996}
    assert Counter(item.split for item in frank.items) == {"test": 1575, "valid": 671}


def test_every_item_has_its_article_and_each_system_one_dataset(frank: Frank) -> None:
    assert {item.hash for item in frank.items} == set(frank.articles)
    for item in frank.items:
        article = frank.articles[item.hash]
        assert (article.dataset, article.split) == (item.dataset, item.split)
    datasets_of_system: dict[str, set[str]] = {}
    for item in frank.items:
        datasets_of_system.setdefault(item.model_name, set()).add(item.dataset)
    assert len(datasets_of_system) == 9
    assert all(len(datasets) == 1 for datasets in datasets_of_system.values())


def test_item_fields_parsed(frank: Frank) -> None:
    first = frank.items[0]
    assert first.key == ("b71b7737562c6aa7c3ceefcbb2073a35c9854e54", "bart")
    assert first.summary.startswith("physical activity can increase grey matter")
    assert set(first.categories) == set(CATEGORY_COLUMNS) == set(first.flips)
    for item in frank.items:
        # Ignoring one category's errors can only raise the factuality share.
        assert all(item.flips[c] >= item.factuality - 1e-9 for c in CATEGORY_COLUMNS)


def test_baseline_metrics_aligned_by_hash_and_model_name(frank: Frank, data_dir: Path) -> None:
    # Independent alignment: a dict over the raw file, looked up in items.jsonl's order.
    raw = json.loads((data_dir / "frank" / "baseline_metrics.json").read_text(encoding="utf-8"))
    by_key = {(record["hash"], record["model_name"]): record for record in raw}
    assert set(frank.metric_names) == set(raw[0]) - {"hash", "model_name", "dataset", "split"}
    assert len(frank.metric_names) == 15
    for metric in frank.metric_names:
        expected = np.array(
            [np.nan if by_key[key][metric] is None else by_key[key][metric] for key in frank.item_keys()]
        )
        np.testing.assert_array_equal(baseline_scores(frank, metric), expected)
    missing = {metric: int(np.isnan(baseline_scores(frank, metric)).sum()) for metric in frank.metric_names}
    assert missing["FEQA"] == 4
    assert missing["Dep Entail"] == 83
    assert all(missing[metric] == 0 for metric in PUBLISHED_METRICS)


def test_unknown_metric_is_refused(frank: Frank) -> None:
    with pytest.raises(KeyError, match="'BERTScore'"):
        baseline_scores(frank, "BERTScore")


# ---------------------------------------------------------------------------------- hand-made files


def _item(hash_: str, model: str, dataset: str = "cnndm", split: str = "test", **scores: float) -> dict:
    row = {
        "hash": hash_,
        "model_name": model,
        "dataset": dataset,
        "split": split,
        "summary": "s",
        "reference": "r",
        "Factuality": 1.0,
    }
    for column in CATEGORY_COLUMNS:
        row[column] = 1.0
        row[f"Flip_{column}"] = 1.0
    row.update(scores)
    return row


def _write_tiny(root: Path, *, items=None, articles=None, baselines=None) -> Path:
    folder = root / "frank"
    folder.mkdir(parents=True, exist_ok=True)
    items = items if items is not None else [_item("h1", "bart"), _item("h1", "pgn"), _item("h2", "bart")]
    articles = (
        articles
        if articles is not None
        else [{"hash": h, "dataset": "cnndm", "split": "test", "url": "u", "article": "a"} for h in ("h1", "h2")]
    )
    if baselines is None:
        baselines = [
            {
                "hash": row["hash"],
                "model_name": row["model_name"],
                "dataset": row["dataset"],
                "split": row["split"],
                "FactCC": 0.5,
                "QAGS": None,
            }
            for row in items
        ]
    (folder / "items.jsonl").write_text("".join(json.dumps(row) + "\n" for row in items), encoding="utf-8")
    (folder / "articles.jsonl").write_text("".join(json.dumps(row) + "\n" for row in articles), encoding="utf-8")
    (folder / "baseline_metrics.json").write_text(json.dumps(baselines, indent=4), encoding="utf-8")
    return root


def test_data_directory_is_a_parameter(tmp_path: Path) -> None:
    frank = load_frank(_write_tiny(tmp_path))
    assert frank.item_keys() == [("h1", "bart"), ("h1", "pgn"), ("h2", "bart")]
    assert frank.metric_names == ("FactCC", "QAGS")
    assert np.isnan(baseline_scores(frank, "QAGS")).all()


def test_unknown_dataset_names_file_and_line(tmp_path: Path) -> None:
    items = [_item("h1", "bart"), _item("h1", "pgn"), _item("h2", "bart", dataset="xsum")]
    _write_tiny(tmp_path, items=items)
    with pytest.raises(FrankDataError, match=r"items\.jsonl:3: unknown dataset 'xsum'"):
        load_frank(tmp_path)


def test_missing_field_names_file_and_line(tmp_path: Path) -> None:
    items = [_item("h1", "bart"), _item("h1", "pgn"), _item("h2", "bart")]
    del items[1]["Flip_EntE"]
    _write_tiny(tmp_path, items=items)
    with pytest.raises(FrankDataError, match=r"items\.jsonl:2: missing field 'Flip_EntE'"):
        load_frank(tmp_path)


def test_missing_field_in_baselines_names_line_of_the_record(tmp_path: Path) -> None:
    _write_tiny(tmp_path)
    path = tmp_path / "frank" / "baseline_metrics.json"
    records = json.loads(path.read_text())
    del records[2]["model_name"]
    text = json.dumps(records, indent=4)
    path.write_text(text)
    starts = [number for number, line in enumerate(text.splitlines(), start=1) if line == "    {"]
    assert starts[2] == 18  # "[" + two records of 8 lines (6 fields) before it
    with pytest.raises(FrankDataError, match=r"baseline_metrics\.json:18: record 2: missing field 'model_name'"):
        load_frank(tmp_path)


def test_bad_values_are_refused(tmp_path: Path) -> None:
    _write_tiny(tmp_path, items=[_item("h1", "bart", Factuality=1.5)])
    with pytest.raises(FrankDataError, match=r"items\.jsonl:1: field 'Factuality' must lie in \[0, 1\]; got 1.5"):
        load_frank(tmp_path)
    _write_tiny(tmp_path, items=[_item("h1", "bart", EntE="high")])
    with pytest.raises(FrankDataError, match=r"items\.jsonl:1: field 'EntE' must be a finite number"):
        load_frank(tmp_path)
    (tmp_path / "frank" / "items.jsonl").write_text('{"hash": "h1",\n')
    with pytest.raises(FrankDataError, match=r"items\.jsonl:1: invalid JSON"):
        load_frank(tmp_path)


def test_cross_file_problems_are_refused(tmp_path: Path) -> None:
    _write_tiny(tmp_path, items=[_item("h1", "bart"), _item("h3", "bart")])
    with pytest.raises(FrankDataError, match=r"items\.jsonl:2: hash 'h3' has no article"):
        load_frank(tmp_path)
    _write_tiny(tmp_path, items=[_item("h1", "bart"), _item("h1", "bart")])
    with pytest.raises(FrankDataError, match=r"items\.jsonl:2: duplicate \(hash, model_name\)"):
        load_frank(tmp_path)
    items = [_item("h1", "bart"), _item("h2", "bart")]
    baselines = [{"hash": "h1", "model_name": "bart", "dataset": "cnndm", "split": "test", "FactCC": 1.0}]
    _write_tiny(tmp_path, items=items, baselines=baselines)
    with pytest.raises(FrankDataError, match=r"baseline_metrics\.json: no record for item \('h2', 'bart'\)"):
        load_frank(tmp_path)
    baselines.append({"hash": "h2", "model_name": "bart", "dataset": "cnndm", "split": "valid", "FactCC": 1.0})
    _write_tiny(tmp_path, items=items, baselines=baselines)
    with pytest.raises(FrankDataError, match=r"record \('h2', 'bart'\) has dataset/split"):
        load_frank(tmp_path)
    baselines[1]["split"] = "test"
    baselines.append({"hash": "h9", "model_name": "bart", "dataset": "cnndm", "split": "test", "FactCC": 1.0})
    _write_tiny(tmp_path, items=items, baselines=baselines)
    with pytest.raises(FrankDataError, match="1 records match no item"):
        load_frank(tmp_path)


def test_missing_file_is_named_and_a_data_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"articles\.jsonl: file not found") as caught:
        load_frank(tmp_path)
    assert isinstance(caught.value, FrankDataError)
    assert caught.value.path == tmp_path / "frank" / "articles.jsonl" and caught.value.line is None
