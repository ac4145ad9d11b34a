"""Issue 22 #7: a memdeck.db whose tables have other columns.

Every statement names its columns, so another column order and extra columns memdeck can leave
empty are fine; a table that lacks a column memdeck reads or writes, or holds an extra column
that is NOT NULL without a default, is refused when memdeck.db is opened
(``core/deck/db.py`` ``_check_tables``), with the table and the columns named, before any read or
write: never an SQLite error halfway through a command, never a changed file.
"""

from __future__ import annotations

import sqlite3

import pytest

from memdeck.core.cli import main
from memdeck.core.config import Config
from memdeck.core.deck import db as deckdb
from memdeck.core.deck import journal
from memdeck.core.home import HermesHome
from memdeck.core.memory.store import MemoryStore
from memdeck.core.sqlite_files import raw_fd


def _rebuild_journal(home: HermesHome, columns: str, copy: str, into: str | None = None) -> None:
    """``journal`` rebuilt with ``columns``: the old rows' ``copy`` columns selected into ``into``."""
    conn = sqlite3.connect(deckdb.db_path(home), isolation_level=None)
    try:
        conn.executescript(
            f"BEGIN; CREATE TABLE journal_x ({columns});"
            f"INSERT INTO journal_x ({into or copy}) SELECT {copy} FROM journal;"
            "DROP TABLE journal; ALTER TABLE journal_x RENAME TO journal; COMMIT;")
    finally:
        conn.close()


def _bytes(home: HermesHome) -> bytes:
    import os

    with raw_fd(deckdb.db_path(home)) as fd:
        return os.pread(fd, 1 << 24, 0)


_ALL = "journal_id, ts, actor, op, kind, target, scope, session_id, before, after, detail, txn, undone_by, state"


@pytest.fixture
def home(hermes_home: HermesHome) -> HermesHome:
    s = MemoryStore(hermes_home, Config())
    s.add("memory", "first fact")
    s.add("memory", "second fact")
    return hermes_home


def test_other_column_order_and_extra_columns_are_used_by_name(home: HermesHome, capsys) -> None:
    _rebuild_journal(home, "note TEXT, state TEXT NOT NULL DEFAULT 'done', undone_by INTEGER, txn TEXT,"
                           " detail TEXT NOT NULL DEFAULT '{}', after TEXT, before TEXT, session_id TEXT, scope TEXT,"
                           " target TEXT, kind TEXT NOT NULL, op TEXT NOT NULL, actor TEXT NOT NULL, ts REAL NOT NULL,"
                           " journal_id INTEGER PRIMARY KEY AUTOINCREMENT, host TEXT NOT NULL DEFAULT 'x', blob BLOB",
                     _ALL)
    h = str(home.path)
    assert main(["--home", h, "memory", "add", "--target", "memory", "third fact"]) == 0
    assert main(["--home", h, "undo"]) == 0
    assert main(["--home", h, "archive", "second fact"]) == 0
    assert main(["--home", h, "restore", "1"]) == 0
    ops = [r.op for r in journal.entries(home, 10)]
    assert ops == ["restore", "archive", "undo", "add", "add", "add"]
    assert home.memory_file("memory").read_text() == "first fact\n§\nsecond fact"


@pytest.mark.parametrize("columns,copy,into,why", [
    # no txn, no state (a journal older than migration 4 stamped with the current user_version)
    ("journal_id INTEGER PRIMARY KEY AUTOINCREMENT, ts REAL NOT NULL, actor TEXT NOT NULL, op TEXT NOT NULL,"
     " kind TEXT NOT NULL, target TEXT, scope TEXT, session_id TEXT, before TEXT, after TEXT,"
     " detail TEXT NOT NULL DEFAULT '{}', undone_by INTEGER",
     "journal_id, ts, actor, op, kind, target, scope, session_id, before, after, detail, undone_by", None,
     "its journal table lacks the column(s) state, txn"),
    # an extra column no row memdeck writes can fill
    ("journal_id INTEGER PRIMARY KEY AUTOINCREMENT, ts REAL NOT NULL, actor TEXT NOT NULL, op TEXT NOT NULL,"
     " kind TEXT NOT NULL, target TEXT, scope TEXT, session_id TEXT, before TEXT, after TEXT,"
     " detail TEXT NOT NULL DEFAULT '{}', txn TEXT, undone_by INTEGER, state TEXT NOT NULL DEFAULT 'done',"
     " signed_by TEXT NOT NULL", _ALL + ", 'me'", _ALL + ", signed_by",
     "extra NOT NULL column(s) without a default: signed_by"),
], ids=["missing-columns", "extra-not-null-column"])
def test_a_journal_memdeck_cannot_write_is_refused_up_front(home: HermesHome, capsys, columns, copy, into,
                                                            why) -> None:
    _rebuild_journal(home, columns, copy, into)
    before_file = home.memory_file("memory").read_bytes()
    before_db = _bytes(home)
    h = str(home.path)
    for argv in (["memory", "add", "--target", "memory", "third fact"], ["undo"], ["journal"], ["history"],
                 ["pin", "Use metric units", "--session", "s1"], ["status"]):
        code = main(["--home", h, *argv])
        err = capsys.readouterr().err
        assert "Traceback" not in err and "OperationalError" not in err and "IntegrityError" not in err, (argv, err)
        assert why in err, (argv, err)
        assert code in (0, 1), (argv, code)  # status still shows the memory files, with the warning
    assert home.memory_file("memory").read_bytes() == before_file
    assert _bytes(home) == before_db
    with pytest.raises(deckdb.DeckDBError, match="move it aside"):
        deckdb.connect(home)


def test_a_missing_table_is_refused(home: HermesHome) -> None:
    conn = sqlite3.connect(deckdb.db_path(home), isolation_level=None)
    conn.execute("DROP TABLE history")
    conn.close()
    with pytest.raises(deckdb.DeckDBError, match="it has no history table"):
        deckdb.connect(home)


def test_a_read_only_memdeck_db_stays_read_only(home: HermesHome) -> None:
    """Opening memdeck.db takes group and other permissions off it; it also made the owner's
    bits rw, turning a memdeck.db someone had made read-only writable (found by the hostile
    homes): only group and other bits are taken now."""
    import os
    import stat

    path = deckdb.db_path(home)
    os.chmod(path, 0o444)
    conn = deckdb.connect(home) if os.geteuid() == 0 else None  # root can still open it to read
    if conn is not None:
        conn.close()
    else:
        with pytest.raises(deckdb.DeckDBError):
            deckdb.connect(home)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o400
