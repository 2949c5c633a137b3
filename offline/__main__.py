"""``python -m offline``: see :mod:`offline.cli`."""

from offline.cli import main

raise SystemExit(main())
