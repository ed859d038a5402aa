"""``python -m reference.mixture_of_experts``: see ``--help``."""

from .bench import main

raise SystemExit(main())
