"""Hermes 0.19's own web dashboard on a loopback port, for the "Memory" tab's tests and picture.

:func:`hermes_dashboard` runs, in a fresh Python with ``HERMES_HOME`` set, what ``hermes dashboard
--no-open --port 0`` runs: ``hermes_cli.web_server.start_server("127.0.0.1", 0, open_browser=False)``
(Hermes' FastAPI app, its middlewares, its plugin discovery at import, served by uvicorn). It reads
the port from Hermes' ``HERMES_DASHBOARD_READY port=N`` line and the session token the way the
browser gets it: from the ``window.__HERMES_SESSION_TOKEN__`` Hermes injects into ``index.html``.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SERVE = "from hermes_cli.web_server import start_server\nstart_server('127.0.0.1', 0, open_browser=False)\n"
READY_S = 120.0


@dataclass
class Dashboard:
    """One running Hermes dashboard: its base URL, the session token its page carries, its process."""

    base: str
    token: str
    proc: subprocess.Popen[bytes]
    stderr: Path

    def request(self, method: str, path: str, *, token: str | None = None, body: bytes | None = None) -> tuple[int, Any]:
        """``(status, body)`` of one request to the server; ``token``: sent as Hermes'
        ``X-Hermes-Session-Token`` header (None: no header)."""
        import json

        req = urllib.request.Request(self.base + path, method=method, data=body)
        if token is not None:
            req.add_header("X-Hermes-Session-Token", token)
        if body is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                status, raw = r.status, r.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        try:
            return status, json.loads(raw or b"null")
        except ValueError:
            return status, raw.decode("utf-8", "replace")


def _ready_port(proc: subprocess.Popen[bytes], err: Path) -> int:
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    buf = b""
    deadline = time.monotonic() + READY_S
    while True:
        m = re.search(rb"HERMES_DASHBOARD_READY port=(\d+)", buf)
        if m:
            return int(m.group(1))
        left = deadline - time.monotonic()
        if left <= 0 or proc.poll() is not None:
            raise AssertionError(f"Hermes' dashboard did not start: {buf!r} {err.read_text(errors='replace')[-3000:]}")
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            chunk = os.read(fd, 4096)
            if not chunk and proc.poll() is not None:
                continue
            buf += chunk


@contextlib.contextmanager
def hermes_dashboard(home: Path, tmp: Path) -> Iterator[Dashboard]:
    """Start Hermes' dashboard on ``home`` (module docstring); stop it (SIGTERM, then SIGKILL) after."""
    err = tmp / f"hermes-dashboard-{time.monotonic_ns()}.err"
    user_home = tmp / "user-home"  # nothing of the machine's ~/.hermes is read or written
    user_home.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "HERMES_HOME": str(home), "HOME": str(user_home), "TZ": "UTC", "PYTHONUNBUFFERED": "1"}
    env.pop("HERMES_DASHBOARD_SESSION_TOKEN", None)
    with open(err, "wb") as err_f:
        proc = subprocess.Popen([sys.executable, "-c", SERVE], stdout=subprocess.PIPE, stderr=err_f,
                                stdin=subprocess.DEVNULL, cwd=tmp, env=env, start_new_session=True)
    try:
        port = _ready_port(proc, err)
        base = f"http://127.0.0.1:{port}"
        with urllib.request.urlopen(base + "/", timeout=60) as r:
            page = r.read().decode("utf-8")
        m = re.search(r'window\.__HERMES_SESSION_TOKEN__="([^"]+)"', page)
        assert m, "Hermes' index.html carries no session token"
        yield Dashboard(base, m.group(1), proc, err)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=20)
        if proc.stdout is not None:
            proc.stdout.close()
