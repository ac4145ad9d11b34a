"""``python -m memdeck.core.cli COMMAND`` runs one headless ``memdeck`` command (no dashboard)."""

import sys

from . import main

sys.exit(main())
