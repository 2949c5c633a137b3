"""Run every benchmark under bench/ and print their tables (`make bench`)."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path


def main() -> int:
    """Import each bench_* module and call its main(); report which ones failed, exit 1 if any did."""
    failed = []
    for module in sorted(pkgutil.iter_modules([str(Path(__file__).parent)]), key=lambda m: m.name):
        if not module.name.startswith("bench_"):
            continue
        try:
            importlib.import_module(f"bench.{module.name}").main()
        except Exception as error:  # a broken benchmark must not hide the others
            failed.append(f"{module.name}: {error!r}")
    for line in failed:
        print(f"FAILED {line}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
