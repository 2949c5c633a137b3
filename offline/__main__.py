"""``python -m offline``: see :mod:`offline.cli`."""

import os

# One BLAS thread per process, unless the caller says otherwise: the offline work is many small least-squares and
# matrix products, for which OpenBLAS's thread hand-offs cost more than they save (the FRANK baselines: 1.7 s of
# CPU with one thread, 7.7 s with two on this 2-core machine, and far worse when the machine is busy). Set before
# numpy loads; the validity study's child process inherits it.
for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(variable, "1")

from offline.cli import main  # noqa: E402  (after the BLAS setting)

raise SystemExit(main())
