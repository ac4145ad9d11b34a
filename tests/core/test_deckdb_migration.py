"""memdeck.db migration 6: ``target`` keeps only Hermes' memory target; anchor rows move to
``scope``/``session_id`` (archive: ``anchor_id``), every row kept, in one transaction."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from memdeck.core import history
from memdeck.core.deck import archive, journal
from memdeck.core.deck import db as deckdb
from memdeck.core.home import HermesHome

#: the schema version of this memdeck (read before any test patches it)
CURRENT = deckdb.SCHEMA_VERSION

def _v5(home: HermesHome) -> sqlite3.Connection:
    """A memdeck.db at schema 5 (the real steps 1-5), holding memory and anchor rows in each table."""
    path = deckdb.db_path(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    c = sqlite3.connect(str(path), isolation_level=None)
    for step in deckdb.MIGRATIONS[:5]:
        for stmt in step.split(";"):
            if stmt.strip():
                c.execute(stmt)
    c.execute("PRAGMA user_version = 5")
    j = ("INSERT INTO journal (journal_id, ts, actor, op, kind, target, before, after, detail, state)"
         " VALUES (?, 1.0, 'cli', ?, ?, ?, NULL, NULL, ?, ?)")
    c.execute(j, (1, "add", "memory", "user", json.dumps({"text": "a"}), "done"))
    c.execute(j, (2, "pin", "anchor", "s1", json.dumps({"anchor_id": "p1", "global_before": None, "global_after": {}}),
                  "done"))  # a global pin pinned in session s1 (persist/ changed too)
    c.execute(j, (3, "update", "anchor", "s1", json.dumps({"anchor_id": "p2"}), "intent"))  # session file only
    c.execute(j, (4, "unpin", "anchor", "global", json.dumps({"anchor_id": "p1", "global_before": {}}), "done"))
    c.execute(j, (5, "pin", "anchor", "s2", "not json", "unknown"))  # a damaged detail is kept, not fatal
    c.execute(j, (6, "add", "memory", "memory", "{}", "intent"))
    c.execute("DELETE FROM journal WHERE journal_id = 6")  # a discarded intent: its id is never reused
    a = ("INSERT INTO archive (archive_id, kind, target, text, payload, actor, archived_at, state)"
         " VALUES (?, ?, ?, ?, ?, 'cli', 1.0, ?)")
    c.execute(a, (1, "memory", "memory", "old fact", "{}", "archived"))
    c.execute(a, (2, "anchor", "p3", "Cite", json.dumps({"session_id": "s1", "scope": "global", "anchor": {"id": "p3"}}),
                  "archived"))
    c.execute(a, (3, "anchor", "p4", "Metric", json.dumps({"session_id": "s2", "scope": "session"}), "restored"))
    s = ("INSERT INTO history_seen (path, kind, target, stamp, content, seen_at, journal_mark)"
         " VALUES (?, ?, ?, 'st', 'c', 1.0, 4)")
    c.execute(s, ("memories/USER.md", "memory", "user"))
    c.execute(s, ("pending/memory/x.json", "pending", "memory"))
    c.execute(s, ("memlock/s_1.json", "anchor", "s/1"))
    c.execute(s, ("memlock/persist/p1.json", "anchor", "global"))
    h = ("INSERT INTO history (change_id, kind, target, path, op, until, actor) VALUES (?, ?, ?, ?, ?, 2.0, 'external')")
    c.execute(h, (1, "memory", "memory", "memories/MEMORY.md", "added"))
    c.execute(h, (2, "anchor", "s/1", "memlock/s_1.json", "anchor_removed"))
    c.execute(h, (3, "anchor", "global", "memlock/persist/p1.json", "anchor_changed"))
    return c


def _all(c: sqlite3.Connection, q: str) -> list[tuple]:
    return [tuple(r) for r in c.execute(q)]


def test_a_v5_database_migrates_with_every_row_mapped(hermes_home: HermesHome) -> None:
    _v5(hermes_home).close()
    c = deckdb.connect(hermes_home)
    try:
        assert c.execute("PRAGMA user_version").fetchone()[0] == deckdb.SCHEMA_VERSION
        assert _all(c, "SELECT journal_id, kind, target, scope, session_id, state, detail FROM journal ORDER BY 1") == [
            (1, "memory", "user", None, None, "done", json.dumps({"text": "a"})),
            (2, "anchor", None, "global", "s1", "done",
             json.dumps({"anchor_id": "p1", "global_before": None, "global_after": {}})),
            (3, "anchor", None, "session", "s1", "intent", json.dumps({"anchor_id": "p2"})),
            (4, "anchor", None, "global", None, "done", json.dumps({"anchor_id": "p1", "global_before": {}})),
            (5, "anchor", None, "session", "s2", "unknown", "not json"),
        ]
        assert _all(c, "SELECT archive_id, kind, target, anchor_id, scope, session_id, text, state FROM archive"
                       " ORDER BY 1") == [
            (1, "memory", "memory", None, None, None, "old fact", "archived"),
            (2, "anchor", None, "p3", "global", "s1", "Cite", "archived"),
            (3, "anchor", None, "p4", "session", "s2", "Metric", "restored"),
        ]
        assert _all(c, "SELECT path, kind, target, scope, session_id, journal_mark FROM history_seen ORDER BY 1") == [
            ("memlock/persist/p1.json", "anchor", None, "global", None, 4),
            ("memlock/s_1.json", "anchor", None, "session", "s/1", 4),
            ("memories/USER.md", "memory", "user", None, None, 4),
            ("pending/memory/x.json", "pending", "memory", None, None, 4),
        ]
        assert _all(c, "SELECT change_id, kind, target, scope, session_id, op FROM history ORDER BY 1") == [
            (1, "memory", "memory", None, None, "added"),
            (2, "anchor", None, "session", "s/1", "anchor_removed"),
            (3, "anchor", None, "global", None, "anchor_changed"),
        ]
        names = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")}
        assert {"journal_kind_idx", "journal_txn_idx", "journal_state_idx", "archive_state_idx", "history_target_idx",
                "history_session_idx", "history_until_idx"} <= names
        assert not {r[0] for r in c.execute("SELECT name FROM sqlite_master")} & {
            "journal_v6", "archive_v6", "history_v6", "history_seen_v6"}
    finally:
        c.close()
    # the readers see the new fields, and ids keep counting past the discarded intent #6
    rows = {r.journal_id: r for r in journal.entries(hermes_home)}
    assert (rows[2].target, rows[2].scope, rows[2].session_id, rows[2].where) == (None, "global", "s1", "s1")
    assert rows[4].where == "global" and rows[1].where == "user"
    assert [r.journal_id for r in journal.intents(hermes_home, "anchor")] == [3]
    assert journal.record(hermes_home, actor="cli", op="add", kind="memory", target="memory", before=None,
                          after="x") == 7
    item = archive.get(hermes_home, 2)
    assert item is not None and (item.target, item.anchor_id, item.where) == (None, "p3", "p3")
    assert [ch.change_id for ch in history.list_changes(hermes_home, session_id="s/1")] == [2]
    assert [ch.change_id for ch in history.list_changes(hermes_home, scope="global")] == [3]
    assert [ch.change_id for ch in history.list_changes(hermes_home, target="memory")] == [1]


def test_a_failed_migration_leaves_the_v5_database_as_it_was(hermes_home: HermesHome, monkeypatch) -> None:
    _v5(hermes_home).close()
    path = deckdb.db_path(hermes_home)
    broken = deckdb.MIGRATIONS[:5] + (deckdb.MIGRATIONS[5] + ";\nSELECT no_such_column FROM journal",)
    monkeypatch.setattr(deckdb, "MIGRATIONS", broken)
    with pytest.raises(deckdb.DeckDBError):
        deckdb.connect(hermes_home)
    c = sqlite3.connect(str(path))
    try:
        assert c.execute("PRAGMA user_version").fetchone()[0] == 5
        assert _all(c, "SELECT journal_id, target FROM journal ORDER BY 1") == [
            (1, "user"), (2, "s1"), (3, "s1"), (4, "global"), (5, "s2")]
        assert _all(c, "SELECT target FROM archive ORDER BY archive_id") == [("memory",), ("p3",), ("p4",)]
        assert "scope" not in {r[1] for r in c.execute("PRAGMA table_info(history)")}
    finally:
        c.close()


def test_a_current_database_is_left_alone(hermes_home: HermesHome) -> None:
    jid = journal.record(hermes_home, actor="cli", op="pin", kind="anchor", scope="session", session_id="s1",
                         before=None, after="{}", detail={"anchor_id": "p1"})
    c = deckdb.connect(hermes_home)
    schema = _all(c, "SELECT type, name, sql FROM sqlite_master ORDER BY name")
    c.close()
    c = deckdb.connect(hermes_home)
    try:
        assert c.execute("PRAGMA user_version").fetchone()[0] == deckdb.SCHEMA_VERSION
        assert _all(c, "SELECT type, name, sql FROM sqlite_master ORDER BY name") == schema
        assert _all(c, "SELECT journal_id, target, scope, session_id FROM journal") == [(jid, None, "session", "s1")]
    finally:
        c.close()


def test_a_newer_schema_version_is_still_refused(hermes_home: HermesHome) -> None:
    c = deckdb.connect(hermes_home)
    c.execute(f"PRAGMA user_version = {deckdb.SCHEMA_VERSION + 1}")
    c.close()
    with pytest.raises(deckdb.DeckDBError, match=f"schema version {deckdb.SCHEMA_VERSION + 1}"):
        deckdb.connect(hermes_home)
    c = sqlite3.connect(str(deckdb.db_path(hermes_home)))
    try:
        assert c.execute("PRAGMA user_version").fetchone()[0] == deckdb.SCHEMA_VERSION + 1
    finally:
        c.close()


def test_migration_8_adds_the_semantic_caches_and_keeps_every_v7_row(hermes_home: HermesHome, monkeypatch) -> None:
    """Migration 8 (issue 28) is additive: a v7 memdeck.db gains ``embeddings`` and
    ``weights_checks`` with its rows untouched; a memdeck that knows only 7 refuses the v8 file."""
    with monkeypatch.context() as m:
        m.setattr(deckdb, "MIGRATIONS", deckdb.MIGRATIONS[:7])
        m.setattr(deckdb, "SCHEMA_VERSION", 7)
        jid = journal.record(hermes_home, actor="cli", op="pin", kind="anchor", scope="session", session_id="s1",
                             before=None, after="{}", detail={"anchor_id": "p1"})
        c = deckdb.connect(hermes_home)
        assert c.execute("PRAGMA user_version").fetchone()[0] == 7
        assert "embeddings" not in {r[0] for r in c.execute("SELECT name FROM sqlite_master")}
        c.close()
    c = deckdb.connect(hermes_home)
    try:
        assert c.execute("PRAGMA user_version").fetchone()[0] == deckdb.SCHEMA_VERSION >= 8
        assert {"embeddings", "weights_checks"} <= {r[0] for r in c.execute("SELECT name FROM sqlite_master")}
        assert _all(c, "SELECT journal_id, scope, session_id FROM journal") == [(jid, "session", "s1")]
    finally:
        c.close()
    assert deckdb.store_embeddings(hermes_home, "enc", 2, [("k1", b"\x00" * 8)])
    assert deckdb.load_embeddings(hermes_home, ["k1", "k2"]) == {"k1": b"\x00" * 8}
    assert deckdb.store_weights_check(hermes_home, "/m/model.safetensors", 10, 20, "ab" * 32)
    assert deckdb.load_weights_check(hermes_home, "/m/model.safetensors", 10, 20) == "ab" * 32
    assert deckdb.load_weights_check(hermes_home, "/m/model.safetensors", 10, 21) is None  # touched: hash again
    with monkeypatch.context() as m:  # an older memdeck refuses the newer file, and leaves it as it is
        m.setattr(deckdb, "MIGRATIONS", deckdb.MIGRATIONS[:7])
        m.setattr(deckdb, "SCHEMA_VERSION", 7)
        with pytest.raises(deckdb.DeckDBError, match=rf"schema version {CURRENT}; this memdeck understands 7"):
            deckdb.connect(hermes_home)
        assert deckdb.load_embeddings(hermes_home, ["k1"]) == {"k1": b"\x00" * 8}  # the reader's mode=ro open still works


def test_the_semantic_cache_writers_never_create_or_raise(tmp_path: Path) -> None:
    home = tmp_path / "h"
    home.mkdir()
    assert deckdb.store_embeddings(home, "enc", 2, [("k", b"\x00" * 8)]) is False  # no memdeck.db: nothing created
    assert deckdb.store_weights_check(home, "/p", 1, 2, "x") is False
    assert not deckdb.db_path(home).exists()
    assert deckdb.load_embeddings(home, ["k"]) == {} and deckdb.load_weights_check(home, "/p", 1, 2) is None


def _v8_with_history(home: HermesHome, n: int = 300) -> list[tuple]:
    """A memdeck.db at schema 8 (the real steps 1-8) holding ``n`` history rows of every kind, the
    oldest trimmed away (ids start past 1, with gaps), as a home used for a while has them."""
    path = deckdb.db_path(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    c = sqlite3.connect(str(path), isolation_level=None)
    for step in deckdb.MIGRATIONS[:8]:
        for stmt in step.split(";"):
            if stmt.strip():
                c.execute(stmt)
    c.execute("PRAGMA user_version = 8")
    ins = ("INSERT INTO history (kind, target, scope, session_id, path, op, before, after, since, until, actor,"
           " attribution, reverted_by) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)")
    for i in range(n):
        if i % 3 == 2:
            row = ("anchor", None, "session" if i % 2 else "global", f"s{i % 5}" if i % 2 else None,
                   f"memlock/s{i % 5}.json", "anchor_changed", json.dumps({"text": f"before {i}"}),
                   json.dumps({"text": f"after {i} ✓"}), float(i), float(i) + 0.5, "external", json.dumps({"anchor_id": f"a{i}"}), None)
        else:
            row = ("memory", "memory" if i % 2 else "user", None, None, "memories/MEMORY.md", "replaced",
                   f"entry {i}\nsecond line", f"entry {i} edited §", None if i == 0 else float(i), float(i) + 0.5,
                   ("hermes", "cli", "external", "pending")[i % 4], json.dumps({"journal_id": i}), i - 1 if i % 7 == 0 else None)
        c.execute(ins, row)
    c.execute("DELETE FROM history WHERE change_id <= 40 OR change_id % 50 = 0")  # trimmed, and a few gone
    rows = _all(c, "SELECT * FROM history ORDER BY change_id")
    c.close()
    return rows


def test_migration_9_keeps_every_history_row_and_id(hermes_home: HermesHome) -> None:
    """Migration 9 (issue 23, gap 4) rebuilds ``history`` without AUTOINCREMENT and with partial
    per-target and per-session indexes: every row and id is kept, the queries still use the
    indexes, new ids continue past the highest, and an older memdeck refuses the file."""
    rows = _v8_with_history(hermes_home)
    assert len(rows) > 200
    c = deckdb.connect(hermes_home)
    try:
        assert c.execute("PRAGMA user_version").fetchone()[0] == deckdb.SCHEMA_VERSION
        assert _all(c, "SELECT * FROM history ORDER BY change_id") == rows
        sql = c.execute("SELECT sql FROM sqlite_master WHERE name = 'history'").fetchone()[0]
        assert "AUTOINCREMENT" not in sql.upper()
        assert not _all(c, "SELECT * FROM sqlite_sequence WHERE name LIKE 'history%'")
        assert not {r[0] for r in c.execute("SELECT name FROM sqlite_master")} & {"history_v9"}
        for q, index in (("SELECT * FROM history WHERE target = ? ORDER BY change_id DESC LIMIT 5", "history_target_idx"),
                         ("SELECT * FROM history WHERE session_id = ? ORDER BY change_id DESC LIMIT 5", "history_session_idx"),
                         ("SELECT change_id FROM history WHERE kind = 'memory' AND target = ? AND op = ? "
                          "ORDER BY change_id DESC LIMIT 1", "history_target_idx")):
            plan = " ".join(str(r[3]) for r in c.execute("EXPLAIN QUERY PLAN " + q, ("memory",) * q.count("?")))
            assert index in plan, (q, plan)
    finally:
        c.close()
    top = rows[-1][0]
    assert [ch.change_id for ch in history.list_changes(hermes_home, session_id="s1", limit=1000)] == [
        r[0] for r in reversed(rows) if r[4] == "s1"]
    assert [ch.change_id for ch in history.list_changes(hermes_home, target="user", limit=1000)] == [
        r[0] for r in reversed(rows) if r[2] == "user"]
    # a new change gets the next id; trimming to one row keeps the newest, so ids never repeat
    (hermes_home.path / "memories").mkdir(exist_ok=True)
    mem = hermes_home.memory_file("memory")
    mem.write_text("first entry", encoding="utf-8")
    history.observe(hermes_home)
    mem.write_text("first entry\n§\nsecond entry", encoding="utf-8")
    (new,) = history.observe(hermes_home, keep=0)
    assert new.change_id == top + 1
    mem.write_text("second entry", encoding="utf-8")
    (newer,) = history.observe(hermes_home, keep=0)
    assert newer.change_id == top + 2
    c = deckdb.connect(hermes_home)
    assert _all(c, "SELECT change_id FROM history") == [(top + 2,)]
    c.close()


def test_an_older_memdeck_refuses_a_v9_file(hermes_home: HermesHome, monkeypatch) -> None:
    _v8_with_history(hermes_home, 10)
    deckdb.connect(hermes_home).close()
    with monkeypatch.context() as m:
        m.setattr(deckdb, "MIGRATIONS", deckdb.MIGRATIONS[:8])
        m.setattr(deckdb, "SCHEMA_VERSION", 8)
        with pytest.raises(deckdb.DeckDBError, match=f"schema version {CURRENT}; this memdeck understands 8"):
            deckdb.connect(hermes_home)


def test_a_failed_migration_9_leaves_the_v8_database_as_it_was(hermes_home: HermesHome, monkeypatch) -> None:
    rows = _v8_with_history(hermes_home, 50)
    broken = deckdb.MIGRATIONS[:8] + (deckdb.MIGRATIONS[8] + ";\nSELECT no_such_column FROM history",)
    monkeypatch.setattr(deckdb, "MIGRATIONS", broken)
    with pytest.raises(deckdb.DeckDBError):
        deckdb.connect(hermes_home)
    c = sqlite3.connect(str(deckdb.db_path(hermes_home)))
    try:
        assert c.execute("PRAGMA user_version").fetchone()[0] == 8
        assert _all(c, "SELECT * FROM history ORDER BY change_id") == rows
        assert "AUTOINCREMENT" in c.execute("SELECT sql FROM sqlite_master WHERE name = 'history'").fetchone()[0]
    finally:
        c.close()


def test_migration_10_adds_live_deliveries_and_keeps_a_v9_file(hermes_home: HermesHome, monkeypatch) -> None:
    """issue 33: a v9 memdeck.db gains ``live_deliveries`` and keeps every history row."""
    with monkeypatch.context() as m:
        m.setattr(deckdb, "MIGRATIONS", deckdb.MIGRATIONS[:9])
        m.setattr(deckdb, "SCHEMA_VERSION", 9)
        rows = _v8_with_history(hermes_home, 10)
        deckdb.connect(hermes_home).close()
    c = deckdb.connect(hermes_home)
    try:
        assert c.execute("PRAGMA user_version").fetchone()[0] == deckdb.SCHEMA_VERSION
        assert _all(c, "SELECT * FROM history ORDER BY change_id") == rows
        cols = [r[1] for r in c.execute("PRAGMA table_info(live_deliveries)")]
        assert cols == ["session_id", "entry_hash", "target", "change", "state", "mode", "reason", "turn", "turn_id", "at"]
    finally:
        c.close()


def test_the_chat_notice_migration_adds_chat_notices_and_keeps_live_deliveries(hermes_home: HermesHome,
                                                                                monkeypatch) -> None:
    """issue 35: a memdeck.db from before the chat notice (its step of MIGRATIONS, wherever it lands
    among the other helpers' steps) gains ``chat_notices`` and keeps its live-memory rows."""
    step = next(i for i, m in enumerate(deckdb.MIGRATIONS) if "chat_notices" in m)
    with monkeypatch.context() as m:
        m.setattr(deckdb, "MIGRATIONS", deckdb.MIGRATIONS[:step])
        m.setattr(deckdb, "SCHEMA_VERSION", step)
        c = deckdb.connect(hermes_home)
        c.execute("INSERT INTO live_deliveries VALUES ('S', 'h', 'memory', 'added', 'delivered', 'notice', NULL, 1, "
                  "NULL, 1.0)")
        c.close()
    c = deckdb.connect(hermes_home)
    try:
        assert c.execute("PRAGMA user_version").fetchone()[0] == deckdb.SCHEMA_VERSION
        assert [tuple(r) for r in c.execute("SELECT session_id, entry_hash FROM live_deliveries")] == [("S", "h")]
        assert [r[1] for r in c.execute("PRAGMA table_info(chat_notices)")] == ["chat", "pending_id", "reason",
                                                                               "session_id", "at"]
    finally:
        c.close()


def test_the_constraint_ledger_migration_adds_its_table_and_keeps_an_older_file(hermes_home: HermesHome,
                                                                                monkeypatch) -> None:
    """issue 34: a memdeck.db one step before ``constraint_ledgers`` gains the table (at whatever
    number it lands among the migrations) and keeps every history row."""
    step = deckdb.MIGRATIONS.index(deckdb._CONSTRAINT_LEDGER_SCHEMA)
    with monkeypatch.context() as m:
        m.setattr(deckdb, "MIGRATIONS", deckdb.MIGRATIONS[:step])
        m.setattr(deckdb, "SCHEMA_VERSION", step)
        rows = _v8_with_history(hermes_home, 10)
        deckdb.connect(hermes_home).close()
    c = sqlite3.connect(str(deckdb.db_path(hermes_home)))
    try:
        assert c.execute("PRAGMA user_version").fetchone()[0] == step
        assert c.execute("SELECT 1 FROM sqlite_master WHERE name = 'constraint_ledgers'").fetchone() is None
    finally:
        c.close()
    c = deckdb.connect(hermes_home)
    try:
        assert c.execute("PRAGMA user_version").fetchone()[0] == deckdb.SCHEMA_VERSION
        assert _all(c, "SELECT * FROM history ORDER BY change_id") == rows
        cols = [r[1] for r in c.execute("PRAGMA table_info(constraint_ledgers)")]
        assert cols == ["key", "session_id", "compaction_id", "method", "rule_version", "entry", "counts", "computed_at"]
    finally:
        c.close()


def test_the_api_usage_migration_keeps_a_v10_file(hermes_home: HermesHome, monkeypatch) -> None:
    """issue 37: a memdeck.db of the migrations before ``api_usage`` gains it and keeps its live_deliveries;
    a row the plugin records reads back with its buckets."""
    from memdeck.core.deck import usage

    at = deckdb.MIGRATIONS.index(deckdb._API_USAGE_SCHEMA)
    with monkeypatch.context() as m:
        m.setattr(deckdb, "MIGRATIONS", deckdb.MIGRATIONS[:at])
        m.setattr(deckdb, "SCHEMA_VERSION", at)
        c = deckdb.connect(hermes_home)
        c.execute("INSERT INTO live_deliveries VALUES ('S', 'h', 'memory', 'added', 'delivered', 'delta', NULL, 2, NULL, 5.0)")
        c.close()
    row = usage.from_hook({"session_id": "S", "turn_id": "t1", "api_call_count": 1, "ended_at": 7.5, "message_count": 3,
                           "usage": {"input_tokens": 11, "output_tokens": 5, "cache_read_tokens": 900,
                                     "cache_write_tokens": 40, "reasoning_tokens": 0}})
    assert row is not None and row.prompt_tokens == 951
    assert usage.record(hermes_home, row)
    c = deckdb.connect(hermes_home)
    try:
        assert c.execute("PRAGMA user_version").fetchone()[0] == deckdb.SCHEMA_VERSION
        assert c.execute("SELECT COUNT(*) FROM live_deliveries").fetchone()[0] == 1
    finally:
        c.close()
    assert usage.load_session(hermes_home, "S") == [row]
    assert usage.home_totals(hermes_home) == {"requests": 1, "input_tokens": 11, "output_tokens": 5,
                                              "cache_read_tokens": 900, "cache_write_tokens": 40, "reasoning_tokens": 0}
    assert usage.from_hook({"session_id": "S", "usage": None}) is None  # a response without usage: nothing
