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
    (tmp_path / "h").mkdir()
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
    assert p.system_prompt_in == "system_prompts" and p.version == "between 0.20 and 0.22"
    with StateDB(h.state_db) as db:
        assert db.system_prompt("s1") == "You are Hermes. MEMORY: metric"
        assert db.system_prompt("nope") == ""
    conn = sqlite3.connect(h.state_db)
    conn.execute("INSERT INTO state_meta VALUES ('store_instance_id', 'x')")
    conn.commit()
    conn.close()
    assert (detect_profile(h).version, detect_profile(h).version_source) == ("0.22", "state_meta")
    h.state_db.unlink()
    (h.path / "config.yaml").write_text("model: x\n_config_version: 37\n")
    p = detect_profile(h)
    assert (p.version, p.version_source, p.config_version, p.schema_version) == ("0.20", "config.yaml _config_version", 37, None)


def test_version_for_schema_ranges() -> None:
    assert [version_for_schema(n) for n in (None, 10, 16, 17, 22, 26, 31, 32)] == [
        None, "older than 0.17", "0.17", "between 0.17 and 0.18", "0.19", "0.20", "0.22", "newer than 0.22"]
