"""memdeck's sidecar lock and Hermes 0.19's MemoryStore._file_lock exclude each other."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from memdeck.core.errors import LockTimeout
from memdeck.core.fsio import file_lock
from tests.conftest import requires_hermes

pytestmark = [requires_hermes, pytest.mark.interop]


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "HERMES_HOME": str(home)}


def test_hermes_holding_lock_blocks_memdeck(tmp_path: Path) -> None:
    home = tmp_path / "h"
    (home / "memories").mkdir(parents=True)
    target = home / "memories" / "MEMORY.md"
    code = textwrap.dedent(
        f"""
        import sys, time
        from pathlib import Path
        from tools.memory_tool import MemoryStore
        with MemoryStore._file_lock(Path({str(target)!r})):
            print("held", flush=True)
            sys.stdin.readline()
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", code], env=_env(home), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        with pytest.raises(LockTimeout), file_lock(target, timeout=0.3):
            pass
    finally:
        proc.stdin.write("\n")
        proc.stdin.flush()
        proc.wait(20)
    with file_lock(target, timeout=5):
        pass


def test_memdeck_holding_lock_blocks_hermes_add(tmp_path: Path) -> None:
    home = tmp_path / "h"
    (home / "memories").mkdir(parents=True)
    target = home / "memories" / "MEMORY.md"
    code = textwrap.dedent(
        """
        import time
        from tools.memory_tool import MemoryStore
        s = MemoryStore(); s.load_from_disk()
        print("ready", flush=True)
        r = s.add("memory", "written by hermes")
        print(time.time(), r["success"], flush=True)
        """
    )
    with file_lock(target):
        proc = subprocess.Popen([sys.executable, "-c", code], env=_env(home), stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "ready"  # imported; now calling add()
        time.sleep(0.5)  # give Hermes time to reach flock() and block there
        assert proc.poll() is None, "Hermes wrote while memdeck held the lock"
        released_at = time.time()
    out, _ = proc.communicate(timeout=60)  # the rest of stdout, after "ready"
    done_at, ok = out.split()
    assert ok == "True"
    assert float(done_at) >= released_at
    assert target.read_text(encoding="utf-8") == "written by hermes"
