"""Conformal Judge's HTTP service (Litestar): ``service.http.app.create_app(settings=None)``; run ``python -m service``.

Kept import-light on purpose: ``offline`` imports ``judges`` and must not pull in the web stack.
"""
