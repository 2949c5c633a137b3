"""Reference code that only tests use: SummEval's official annotation format read into the shipped item shape
(a check that ``summeval/items.jsonl`` is the official data). No command reads that format."""
