"""``python -m reference.timestep_distillation``: the demo / benchmark command line."""

from .bench import main

raise SystemExit(main())
