"""The research tests share the panel study's small synthetic judges (its ``datasets`` fixture); the recorded
judges come from tests/recorded_fixtures.py, as for the offline tests."""

from tests.offline.studies.panels.test_study import datasets  # noqa: F401  (a fixture, found by pytest under this name)
