"""``python -m reference.progressive_distillation``: the demo / benchmark command line."""

from .bench import main

raise SystemExit(main())
