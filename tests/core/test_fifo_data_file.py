"""Issue 13 #5 (memory files only): a FIFO in place of MEMORY.md is refused, never blocks."""

from __future__ import annotations

import os
import subprocess
import sys

from memdeck.core.home import HermesHome


def test_fifo_memory_file_is_refused_without_blocking(hermes_home: HermesHome) -> None:
    os.mkfifo(hermes_home.memory_file("memory"))
    code = ("import sys; from memdeck.core.memory.store import MemoryStore; from memdeck.core.home import HermesHome;"
            "from memdeck.core.errors import Refused\n"
            "try:\n MemoryStore(HermesHome(__import__('pathlib').Path(sys.argv[1]))).add('memory', 'x')\n"
            "except Refused as e:\n print(e.code, e.reason)\n")
    # a subprocess with a timeout: a regression blocks on open(), and must not hang the suite
    r = subprocess.run([sys.executable, "-c", code, str(hermes_home.path)], capture_output=True, text=True, timeout=30)
    assert r.stdout.startswith("unreadable") and "not a regular file" in r.stdout, (r.stdout, r.stderr)
    assert os.path.exists(hermes_home.memory_file("memory"))  # the FIFO is left alone
