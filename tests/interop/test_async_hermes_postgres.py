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

#: what the fork's CLI and agent do: its own (async) ``hermes_state.SessionDB`` on the home's state.db
WRITE_STATE_DB = """
import asyncio
from hermes_state import DEFAULT_DB_PATH, SessionDB
async def main():
    db = SessionDB(DEFAULT_DB_PATH)
    await db.create_session("S1", source="cli")
    await db.append_message("S1", "user", "hello")
    r = db.close()
    if asyncio.iscoroutine(r):
        await r
asyncio.run(main())
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


def test_a_postgres_section_beside_sessions_in_state_db_is_not_sessions_elsewhere(async_hermes: Path,
                                                                                  tmp_path: Path) -> None:
    """Issue 37.7: the fork's own CLI/agent SessionDB (``hermes_state.SessionDB``) writes state.db even
    with ``database.postgres`` configured; memdeck then reads state.db and does not say the sessions
    are elsewhere (it says the section is set and unused by the agent)."""
    from memdeck.core.fleet.figures import figures_from_status
    from memdeck.core.home import HermesHome
    from memdeck.core.overview.status import build_status
    from memdeck.core.sessions.profile import detect_profile

    home = tmp_path / "hermes_home"
    (home / "memories").mkdir(parents=True)
    (home / "config.yaml").write_text(CONFIG, encoding="utf-8")
    env = dict(os.environ, HERMES_HOME=str(home), HOME=str(tmp_path))
    env.pop("PYTHONPATH", None)
    proc = subprocess.run([str(async_hermes), "-c", WRITE_STATE_DB], capture_output=True, text=True, env=env,
                          timeout=300, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    h = HermesHome(home)
    p = detect_profile(h)
    assert p.session_store == "sqlite" and not any("sessions are in" in d for d in p.degradations), p.degradations
    assert any("database.postgres is set, but state.db holds the sessions" in n for n in p.notes), p.notes
    st = build_status(h)
    assert "session_store" not in st and [s["id"] for s in st["sessions"]] == ["S1"]
    assert not figures_from_status(st).session_store
