"""The memdeck entry point: exit codes and pipes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_closed_pipe_exits_quietly(tmp_path: Path) -> None:
    home = tmp_path / "h"
    (home / "memories").mkdir(parents=True)
    (home / "memories" / "MEMORY.md").write_text("\n§\n".join(f"entry number {i}" for i in range(4000)), encoding="utf-8")
    proc = subprocess.Popen([sys.executable, "-m", "memdeck.core.cli", "--home", str(home), "status"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.readline()
    proc.stdout.close()  # like `| head -1`
    err = proc.stderr.read().decode()
    proc.wait(60)
    assert "Traceback" not in err
    assert proc.returncode in (0, 141)


def test_usage_error_is_exit_2(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "memdeck.core.cli", "--home", str(tmp_path), "memory", "add"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "usage" in proc.stderr.lower()
