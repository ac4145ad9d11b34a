"""Issue 13 #5: a FIFO in place of a MemLock session file, a global pin or a pending record is
refused, never read: every command returns (a FIFO would block an open() forever)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from memdeck.core.home import HermesHome


@pytest.mark.parametrize("where", ["memlock/s1.json", "memlock/persist/pin_fifo0001.json", "pending/memory/abcd0001.json",
                                   "config.yaml"])
def test_a_fifo_data_file_is_refused_and_nothing_blocks(hermes_home: HermesHome, where: str) -> None:
    path = hermes_home.path / where
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    cmds = [["status", "--json"], ["anchors", "--session", "s1"], ["pending", "list"],
            ["pin", "Use metric units", "--session", "s1"], ["memory", "add", "--target", "memory", "a fact"]]
    for argv in cmds:
        proc = subprocess.run([sys.executable, "-m", "memdeck.core.cli", "--home", str(hermes_home.path), *argv],
                              capture_output=True, text=True, timeout=60)
        assert "Traceback" not in proc.stderr, (argv, proc.stderr[-2000:])
    assert path.exists() and not path.is_file()  # the FIFO is left as it was
