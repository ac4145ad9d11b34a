"""``python -m memdeck.tui`` is the ``memdeck`` command (the dashboard without a command)."""

import sys

from .launch import main

sys.exit(main())
