"""HermesProfile detection on synthetic homes (the matrix checks it on homes built by each
real Hermes: tests/interop/test_matrix_smoke.py::test_profile_of_a_real_home)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from memdeck.core.home import HermesHome
from memdeck.core.sessions import hermes_schema as hs
from memdeck.core.sessions.profile import detect_profile, version_for_schema
from memdeck.core.sessions.statedb import StateDB


def _home(tmp_path: Path) -> HermesHome:
    (tmp_path / "h").mkdir(parents=True)
    return HermesHome(tmp_path / "h")


def test_019_home_is_fully_supported(tmp_path: Path) -> None:
    h = _home(tmp_path)
    hs.create_state_db(h.state_db).close()
    p = detect_profile(h)
    assert (p.schema_version, p.version, p.version_source) == (22, "0.19", "state.db schema")
    assert p.system_prompt_in == "sessions.system_prompt" and p.in_place_compaction and not p.summary_flag
    assert p.fts is not None and p.fts.columns == ("content",) and p.fts.content == ""
    assert p.fts_trigram is not None and p.fts_trigram.tokenizer == "trigram"
    assert p.degradations == () and p.threat_rules == "0.18"
    assert p.summary() == "Hermes 0.19 (schema 22) · fully supported"


def test_newer_schema_and_unknown_pending_fields_are_spelled_out(tmp_path: Path) -> None:
    h = _home(tmp_path)
    hs.create_state_db(h.state_db, version=40).close()
    h.pending_dir.mkdir(parents=True)
    (h.pending_dir / "abcd0001.json").write_text(json.dumps({"id": "abcd0001", "payload": {
        "action": "batch", "target": "memory", "operations": [{"action": "merge", "old_text": "a", "why": "x"}]}}))
    p = detect_profile(h)
    assert p.version == "newer than 0.22" and p.threat_rules == "0.22"
    text = " | ".join(p.degradations)
    assert "schema 40 is newer than memdeck knows (31, Hermes 0.22)" in text
    assert "fields memdeck does not know (why)" in text and "actions memdeck does not know (merge)" in text
    assert p.to_dict()["degradations"] == list(p.degradations)


def test_system_prompts_table_and_version_from_config_and_state_meta(tmp_path: Path) -> None:
    h = _home(tmp_path)
    conn = sqlite3.connect(h.state_db)
    conn.executescript("""
        CREATE TABLE schema_version (version INTEGER); INSERT INTO schema_version VALUES (28);
        CREATE TABLE state_meta (key TEXT PRIMARY KEY, value TEXT);
        CREATE TABLE system_prompts (hash TEXT PRIMARY KEY, prompt TEXT);
        CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT, started_at REAL, system_prompt TEXT,
                               system_prompt_hash TEXT);
        CREATE TABLE messages (id INTEGER PRIMARY KEY, session_id TEXT, role TEXT, content TEXT, timestamp REAL,
                               active INTEGER DEFAULT 1, compacted INTEGER DEFAULT 0);
        INSERT INTO system_prompts VALUES ('h1', 'You are Hermes. MEMORY: metric');
        INSERT INTO sessions VALUES ('s1', 'cli', 1, NULL, 'h1');
    """)
    conn.commit()
    conn.close()
    p = detect_profile(h)
    assert p.system_prompt_in == "system_prompts" and p.version == "between 0.21.0 and 0.21.3"
    with StateDB(h.state_db) as db:
        assert db.system_prompt("s1") == "You are Hermes. MEMORY: metric"
        assert db.system_prompt("nope") == ""
    conn = sqlite3.connect(h.state_db)
    conn.execute("INSERT INTO state_meta VALUES ('store_instance_id', 'x')")  # 0.21 writes it too: no 0.22
    conn.commit()
    conn.close()
    assert detect_profile(h).version == "between 0.21.0 and 0.21.3"
    conn = sqlite3.connect(h.state_db)
    conn.execute("INSERT INTO state_meta VALUES ('message_uid_backfill', 'done')")  # only 0.22 writes it
    conn.commit()
    conn.close()
    assert (detect_profile(h).version, detect_profile(h).version_source) == ("0.22", "state.db message_uid_backfill")
    h.state_db.unlink()
    (h.path / "config.yaml").write_text("model: x\n_config_version: 37\n")
    p = detect_profile(h)
    assert (p.version, p.version_source, p.config_version, p.schema_version) == ("0.20", "config.yaml _config_version", 37, None)


def test_version_for_schema_ranges() -> None:
    assert [version_for_schema(n) for n in (None, 10, 16, 17, 22, 26, 28, 30, 31, 32)] == [
        None, "older than 0.17", "0.17", "between 0.17 and 0.18", "0.19", "0.20", "between 0.21.0 and 0.21.3",
        "0.21.3-0.21.5", "0.22", "newer than 0.22"]


def _schema_home(tmp_path: Path, schema: int, extra_sql: str = "", messages_extra: str = "") -> HermesHome:
    h = _home(tmp_path)
    conn = sqlite3.connect(h.state_db)
    conn.executescript(f"""
        CREATE TABLE schema_version (version INTEGER); INSERT INTO schema_version VALUES ({schema});
        CREATE TABLE state_meta (key TEXT PRIMARY KEY, value TEXT);
        CREATE TABLE system_prompts (hash TEXT PRIMARY KEY, prompt TEXT);
        CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT, started_at REAL, system_prompt TEXT,
                               system_prompt_hash TEXT);
        CREATE TABLE messages (id INTEGER PRIMARY KEY, session_id TEXT, role TEXT, content TEXT, timestamp REAL,
                               active INTEGER DEFAULT 1, compacted INTEGER DEFAULT 0{messages_extra});
        {extra_sql}
    """)
    conn.commit()
    conn.close()
    return h


def test_schema_26_is_020_or_0210_by_what_the_home_has(tmp_path: Path) -> None:
    """Issue 29: iot 0.21.0.post1 writes schema 26 like 0.20, plus messages._compressed_summary,
    gateway_heartbeats and state_meta store_instance_id (docs/HERMES_VERSIONS.md appendix)."""
    assert detect_profile(_schema_home(tmp_path / "a", 26)).version == "0.20"
    p = detect_profile(_schema_home(tmp_path / "b", 26, messages_extra=", _compressed_summary INTEGER"))
    assert p.version == "0.21.0" and p.version_source == "state.db schema 26 + messages._compressed_summary"
    assert p.threat_rules == "0.21"
    p = detect_profile(_schema_home(tmp_path / "c", 26, "CREATE TABLE gateway_heartbeats (backend_id TEXT);"))
    assert p.version == "0.21.0"


def test_schema_30_is_0215_when_a_staged_record_is_pinned_or_the_config_says_so(tmp_path: Path) -> None:
    """0.21.3-0.21.5 all write schema 30; only 0.21.5 stages ``matched_entry`` (its
    ``tools/memory_tool.py``), and its DEFAULT_CONFIG ``_config_version`` is 46."""
    h = _schema_home(tmp_path / "a", 30)
    p = detect_profile(h)
    assert p.version == "0.21.3-0.21.5" and p.threat_rules == "0.22"
    h.pending_dir.mkdir(parents=True)
    (h.pending_dir / "abcd0001.json").write_text(json.dumps({"id": "abcd0001", "payload": {
        "action": "remove", "target": "memory", "content": None, "old_text": "a", "matched_entry": "a fact"}}))
    p = detect_profile(h)
    assert (p.version, p.version_source) == ("0.21.5", "state.db schema 30 + pending records with matched_entry")
    assert not any("pending" in d for d in p.degradations)  # matched_entry is a known field
    h2 = _schema_home(tmp_path / "b", 30)
    (h2.path / "config.yaml").write_text("_config_version: 46\n")
    assert detect_profile(h2).version == "0.21.5"


def test_a_postgresql_session_store_is_named_not_read_as_no_sessions(tmp_path: Path) -> None:
    """async-hermes-agent 0.20.4.1 keeps sessions in PostgreSQL when the embedding app passes its
    store a DSN; the profile's ``database.postgres`` section configures it. Hermes 0.23 names the
    store with ``sessiondb.provider``. Either way memdeck says where the sessions are."""
    from memdeck.core.config import load_config
    from memdeck.core.overview.status import build_status

    h = _home(tmp_path)
    (h.path / "memories").mkdir()
    (h.path / "config.yaml").write_text("database:\n  postgres:\n    pool_size: 5\n")
    cfg = load_config(h)
    assert (cfg.session_store, cfg.session_store_source) == ("postgresql", "database.postgres")
    p = detect_profile(h)
    assert p.session_store == "postgresql"
    assert p.degradations[0].startswith("sessions are in PostgreSQL: not read (config.yaml database.postgres)")
    st = build_status(h)
    assert st["session_store"]["name"] == "postgresql" and st["sessions"] == []
    assert st["session_store"]["message"].startswith("sessions are in PostgreSQL: not read")
    (h.path / "config.yaml").write_text("sessiondb:\n  provider: sqlite\n")
    assert load_config(h).session_store == "sqlite" and "session_store" not in build_status(h)


#: ``sessiondb:`` bodies -> refused by Hermes 0.23 ``hermes_state_provider.py`` ``get_session_db_provider``
#: (``(config.get("sessiondb") or {}).get("provider") or "sqlite"`` must equal ``"sqlite"``; upstream
#: NousResearch/hermes-agent, read with the search tools: 0.23 is not installable here)
SESSIONDB_023 = {"  provider: sqlite\n": False, "  provider: ''\n": False, "  provider:\n": False,
                 "  provider: postgres\n": True, "  provider: SQLite\n": True, "  provider: ' sqlite'\n": True,
                 "  provider: dynamo\n": True}


def test_sessiondb_provider_is_refused_as_hermes_0_23_refuses_it(tmp_path: Path) -> None:
    """Issue 37.6: any ``sessiondb.provider`` but ``sqlite`` makes 0.23 refuse to open its session
    store; state.db stays the store. memdeck warns with that, reads state.db's sessions, and never says
    the sessions are elsewhere."""
    from memdeck.core.config import load_config
    from memdeck.core.overview.status import build_status

    h = _home(tmp_path)
    (h.path / "memories").mkdir()
    for body, refused in SESSIONDB_023.items():
        (h.path / "config.yaml").write_text("sessiondb:\n" + body)
        cfg = load_config(h)
        warned = [w for w in cfg.warnings if "Hermes 0.23 refuses it" in w]
        assert bool(warned) == refused, (body, cfg.warnings)
        assert cfg.session_store == "sqlite"
        p = detect_profile(h)
        assert p.session_store == "sqlite" and not any("sessions are in" in d for d in p.degradations), body
        assert "session_store" not in build_status(h), body
