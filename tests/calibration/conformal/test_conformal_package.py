"""The calibration.conformal package: one public API re-exported from its modules, no private names across modules."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import calibration
from calibration import conformal as package

MODULES = ("evaluate", "fit", "group_pac", "inputs", "learned_model", "methods", "quantile", "sets")
# The names `calibration/conformal.py` offered before it became a package (less ``label_scores``, now the tests'
# reference code in tests/calibration/reference/scores.py); every importer relies on them.
SINGLE_MODULE_API = {
    "CalibrationScores",
    "FittedConformal",
    "GroupCoverage",
    "LEARNED_METHODS",
    "METHODS",
    "PROBABILITY_METHODS",
    "SCORE_METHODS",
    "SetEvaluation",
    "SplitResult",
    "SplitStudy",
    "calibration_scores",
    "conformal_quantile",
    "coverage_by_group",
    "evaluate_sets",
    "fit_conformal",
    "fit_from_scores",
    "predict_sets",
    "prediction_set",
    "probabilities_from_logprobs",
    "repeated_splits",
}


def _isort_order(names: list[str]) -> list[str]:
    """Constants, then classes, then functions, each alphabetical (ruff's RUF022 "isort-style" order)."""
    return sorted(names, key=lambda name: (0 if name.isupper() else 1 if name[0].isupper() else 2, name))


def test_the_package_exports_the_single_module_api():
    assert set(package.__all__) == SINGLE_MODULE_API
    assert list(package.__all__) == _isort_order(list(package.__all__))


@pytest.mark.parametrize("name", sorted(SINGLE_MODULE_API))
def test_each_export_is_the_object_of_exactly_one_module(name):
    owners = [
        module for module in MODULES if name in importlib.import_module(f"calibration.conformal.{module}").__all__
    ]
    assert len(owners) == 1, owners
    assert getattr(package, name) is getattr(importlib.import_module(f"calibration.conformal.{owners[0]}"), name)


@pytest.mark.parametrize("module", MODULES)
def test_module_all_is_sorted_public_and_defined(module):
    namespace = importlib.import_module(f"calibration.conformal.{module}")
    assert list(namespace.__all__) == _isort_order(list(namespace.__all__))
    assert len(set(namespace.__all__)) == len(namespace.__all__)
    for name in namespace.__all__:
        assert not name.startswith("_")
        value = getattr(namespace, name)
        if callable(value) and hasattr(value, "__module__"):
            assert value.__module__ == namespace.__name__, (name, value.__module__)


def test_no_calibration_module_imports_another_modules_private_names():
    root = Path(calibration.__file__).parent
    offenders = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("calibration"):
                offenders += [
                    f"{path.relative_to(root)}: {alias.name}" for alias in node.names if alias.name.startswith("_")
                ]
    assert offenders == []
