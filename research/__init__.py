"""Finished research: studies whose result decided something and serves nothing, kept rerunnable.

Outside the layers (``calibration`` <- ``artifact`` <- ``judges`` <- ``service`` / ``offline``): a research module
may import the product packages, and no product module imports it (an import-linter contract in
``pyproject.toml``). The results these studies produced, and the decisions they justified, are in ``docs/``.
"""
