"""async-hermes-agent 0.20.4.1: sessions in PostgreSQL are named, not read as "no sessions" (issue 29).

That fork keeps the SessionDB contract but can store sessions in PostgreSQL: the embedding
application passes ``hermes_state_postgres.SessionDB`` a ``postgresql+psycopg://`` DSN, and the
profile's ``config.yaml`` ``database.postgres`` section holds that store's settings (its README;
``hermes_state_postgres.py`` ``SessionDB._resolve_engine_options``). Such a home has no state.db
rows. Its write path has no approval gate (no ``memory.write_approval`` staging: nothing to
review). The real fork reads the section here (its own ``_resolve_engine_options``, no database
needed); memdeck then says "sessions are in PostgreSQL: not read" on screen (the health line's
degradation), in ``status --json`` and in ``memdeck sessions``.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.interop.matrix.venvs import hermes_python

pytestmark = pytest.mark.interop

SPEC = "async-hermes-agent==0.20.4.1"
CONFIG = ("database:\n  postgres:\n    pool_size: 3\n    pool_pre_ping: true\n"
          "    connect_args:\n      connect_timeout: 7\n      application_name: async-hermes-agent\n")
PROBE = """
import asyncio, json
from hermes_state_postgres import SessionDB
db = SessionDB("postgresql+psycopg://user:pw@db.example/hermes")
print(json.dumps(asyncio.run(db._resolve_engine_options())))
"""


@pytest.fixture(scope="module")
def async_hermes() -> Path:
    """The fork's venv (module scope: resolved before the per-test fake HOME, so the shared cache
    under the real ~/.cache is found)."""
    py = hermes_python(SPEC)
    if isinstance(py, str):
        pytest.skip(f"async-hermes-agent 0.20.4.1 unavailable: {py}")
    return py


def test_postgresql_sessions_are_named_not_read(async_hermes: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    py = async_hermes
    home = tmp_path / "hermes_home"
    (home / "memories").mkdir(parents=True)
    (home / "config.yaml").write_text(CONFIG, encoding="utf-8")
    env = dict(os.environ, HERMES_HOME=str(home), HOME=str(tmp_path))
    env.pop("PYTHONPATH", None)
    proc = subprocess.run([str(py), "-c", PROBE], capture_output=True, text=True, env=env, timeout=300,
                          cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    opts = json.loads(proc.stdout.strip().splitlines()[-1])
    assert opts["pool_size"] == 3 and opts["connect_args"]["connect_timeout"] == 7  # that fork reads this section

    from memdeck.core.cli import main
    from memdeck.core.home import HermesHome
    from memdeck.core.overview.status import build_status
    from memdeck.core.sessions.profile import detect_profile

    h = HermesHome(home)
    st = build_status(h)
    assert st["sessions"] == [] and st["session_store"]["name"] == "postgresql"
    assert st["session_store"]["message"].startswith("sessions are in PostgreSQL: not read")
    assert any(d.startswith("sessions are in PostgreSQL: not read") for d in detect_profile(h).degradations)
    assert main(["--home", str(home), "sessions"]) == 0
    out = capsys.readouterr().out
    assert "sessions are in PostgreSQL: not read" in out and "no sessions" not in out
