"""``python -m reference.reparameterization`` (see ``--help``)."""

from .cli import main

raise SystemExit(main())
