"""``python -m reference.consistency_latent_diffusion``: the demo / benchmark command line."""

from .bench import main

raise SystemExit(main())
