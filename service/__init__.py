"""Conformal Judge's HTTP service (Litestar): ``service.app.create_app(settings=None)``; run ``python -m service``.

Kept import-light on purpose: ``offline`` imports ``service.judge`` and must not pull in the web stack.
"""
