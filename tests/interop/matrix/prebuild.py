"""Build the interop venvs in the background while the rest of the suite runs.

A fresh machine spends minutes in ``pip install`` for the matrix (one venv per Hermes version,
:mod:`tests.interop.matrix.venvs`). Those installs wait on the network and the disk far more
than on a core, so the suite starts them at collection, ``workers`` at a time, in daemon
threads, and the core and TUI tests run meanwhile. A test that needs a venv calls
``hermes_python(spec)`` as before: the venv's file lock makes it wait for a build in progress
(flock locks are per open file, so a thread of the same process waits too) and then reuses the
result. Nothing here decides a test's outcome: a failed build leaves its reason in the cache
log and ``hermes_python`` reports it when the test asks.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable

from tests.interop.matrix.venvs import hermes_python


def start(specs: Iterable[str], workers: int = 2) -> list[threading.Thread]:
    """Start building ``specs`` (pip requirements ``dist==version``) in ``workers`` daemon threads.

    Returns the threads (already started). Does nothing when ``MEMDECK_INTEROP_NO_INSTALL`` or
    ``MEMDECK_INTEROP_NO_PREBUILD`` is set (a developer running one test wants no installs).
    """
    if os.environ.get("MEMDECK_INTEROP_NO_INSTALL") or os.environ.get("MEMDECK_INTEROP_NO_PREBUILD"):
        return []
    queue = list(dict.fromkeys(specs))
    lock = threading.Lock()

    def work() -> None:
        while True:
            with lock:
                if not queue:
                    return
                spec = queue.pop(0)
            hermes_python(spec)

    threads = [threading.Thread(target=work, name=f"memdeck-venv-prebuild-{i}", daemon=True)
               for i in range(max(1, workers))]
    for thread in threads:
        thread.start()
    return threads
