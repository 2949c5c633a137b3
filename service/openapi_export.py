"""``python -m service.openapi_export [path]``: write the OpenAPI spec (default ``openapi/openapi.json``).

The output is deterministic: keys sorted, two-space indent, a trailing newline, and built from default
settings (no environment: the shipped calibration, no judges, rubrics, panels or keys), so the committed file is
what ``make serve`` serves and changes only when the wire types, routes or the shipped calibration's names,
scales or levels change (service.http.spec_values).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from service.config.settings import Settings, default_thresholds_path
from service.http.app import create_app
from service.http.spec_values import spec_document

__all__ = ["DEFAULT_PATH", "main", "render_openapi"]

DEFAULT_PATH = Path(__file__).resolve().parent.parent / "openapi" / "openapi.json"


def render_openapi() -> str:
    """The app's OpenAPI document as canonical JSON text (sorted keys, indent 2, trailing newline)."""
    app = create_app(Settings(thresholds_path=default_thresholds_path()))
    app.services.calibration.load_initial()  # what the lifespan does first
    return json.dumps(spec_document(app.inner), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write the spec to argv[0] or DEFAULT_PATH and print where it went."""
    args = sys.argv[1:] if argv is None else argv
    target = Path(args[0]) if args else DEFAULT_PATH
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_openapi(), encoding="utf-8")
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
