"""``python -m reference.stochastic_reparameterization`` (see ``--help``)."""

from .cli import main

raise SystemExit(main())
