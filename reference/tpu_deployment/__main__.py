"""``python -m reference.tpu_deployment``: see ``--help``.

``OMP_WAIT_POLICY=PASSIVE`` is set before torch loads OpenMP: with the default active
spin-wait, OpenMP threads on an oversubscribed machine (several jobs on 2 cores) burn their
time slices spinning, and torch at 2 threads was measured 10-50x slower than at 1 thread.
"""

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from .bench import main

if __name__ == "__main__":
    raise SystemExit(main())
