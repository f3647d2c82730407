"""``python -m solrace``: the same as the ``solrace`` command."""

from .cli import main

raise SystemExit(main())
