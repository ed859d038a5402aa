"""``python -m reference.consistency``: the demo / benchmark command line."""

from .bench import main

raise SystemExit(main())
