"""``python -m reference.gradient_checkpointing`` (see ``--help``)."""

from .cli import main

raise SystemExit(main())
