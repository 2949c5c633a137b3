"""`make mutate` works on a scratch copy: it must hold every package the code and its tests import."""

from __future__ import annotations

from tests.test_module_size import PACKAGES
from tools.mutate import COPY, TARGETS


def test_the_scratch_copy_holds_every_package_and_the_tests():
    missing = [package for package in (*PACKAGES, "tests", "tools", "pyproject.toml") if package not in COPY]
    assert not missing, f"tools/mutate.py COPY lacks {missing}: the mutated tests would fail to import"


def test_every_target_mutates_a_copied_package():
    assert all(target["source"] in COPY for target in TARGETS.values())
