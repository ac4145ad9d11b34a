"""fleet's timeout killed only the ssh client: a wrapper's (or a ProxyCommand's) child that kept
the output open hung ``fleet --json`` for ten minutes with ``timeout = 8`` (issue 40 #6). Each
remote probe now runs in its own process group, killed whole at the deadline, and its output is no
longer read after it. A fake ``ssh`` on PATH plays the wrapper."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

_FAKE_SSH = """#!/bin/sh
# a wrapper around ssh: its child keeps stdout and stderr open, and it waits for it
echo $$ >> "{pids}"
sleep 300 &
echo $! >> "{pids}"
wait
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def test_fleet_json_returns_at_the_deadline_and_leaves_no_child(tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    pids = tmp_path / "pids"
    ssh = bindir / "ssh"
    ssh.write_text(_FAKE_SSH.format(pids=pids), encoding="utf-8")
    ssh.chmod(ssh.stat().st_mode | stat.S_IXUSR)
    settings = tmp_path / "settings.toml"
    settings.write_text('[fleet]\nhomes = ["ssh://fakehost/srv/hermes"]\ntimeout = 2\n', encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("HERMES_HOME", "MEMDECK_CONFIG")}
    env.update(PATH=f"{bindir}{os.pathsep}{env.get('PATH', '')}", HOME=str(tmp_path / "user"),
               XDG_CACHE_HOME=str(tmp_path / "cache"), XDG_RUNTIME_DIR="")
    try:
        r = subprocess.run([sys.executable, "-m", "memdeck.tui", "--config", str(settings), "fleet", "--json"],
                           capture_output=True, text=True, env=env, timeout=120, stdin=subprocess.DEVNULL, check=False)
        assert r.returncode == 0, r.stderr
        rows = {row["address"]: row for row in json.loads(r.stdout)}
        remote = rows["ssh://fakehost/srv/hermes"]
        assert "no answer within 2 s" in (remote["error"] or ""), remote
        started = [int(p) for p in pids.read_text().split()]
        assert len(started) >= 2  # the wrapper and its child ran
        assert not [p for p in started if _alive(p)], "a probe's child outlived the deadline"
    finally:
        for p in (int(x) for x in (pids.read_text().split() if pids.exists() else ())):
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
