"""The panel research of ``docs/panels.md`` whose result is "nothing new is served": the four-judge panel against
its members under one nested menu (``nested``, ``recipes``, ``nested_study``) and two-judge cascades
(``cascades``, ``rule_cascades``). Run with ``python -m research.panels {nested,cascades,rule-cascades}``."""
