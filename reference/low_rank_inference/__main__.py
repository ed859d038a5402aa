"""``python -m reference.low_rank_inference``: see ``--help``."""

from .bench import main

raise SystemExit(main())
