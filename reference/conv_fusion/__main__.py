"""``python -m reference.conv_fusion``: see ``--help``."""

from .bench import main

raise SystemExit(main())
