"""``python -m core.cli`` runs the ``memdeck`` command."""

import sys

from . import main

sys.exit(main())
