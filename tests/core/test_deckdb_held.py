"""A long-lived reader holds one memdeck.db connection (issue 9: 0 bytes written while watching;
each open/close of a WAL database deleted and rewrote its -wal and -shm)."""

from __future__ import annotations

import os
import threading

from memdeck.core.deck import db as deckdb
from memdeck.core.home import HermesHome


def test_opened_inside_bound_reuses_one_connection_and_leaves_it_open(hermes_home: HermesHome) -> None:
    deck = deckdb.DeckDB(hermes_home)
    with deck.bound():
        with deckdb.opened(hermes_home) as a:
            a.execute("SELECT 1")
        with deckdb.opened(hermes_home) as b:
            assert b is a
            b.execute("SELECT 1")  # still open after the first block closed
    with deckdb.opened(hermes_home) as c:  # outside the block: a fresh connection, as before
        assert c is not a
    deck.close()


def test_bound_is_per_home_and_per_thread(hermes_home: HermesHome, tmp_path) -> None:
    other = HermesHome(tmp_path / "other")
    (other.path / "memories").mkdir(parents=True)
    deck = deckdb.DeckDB(hermes_home)
    seen: list[object] = []
    with deck.bound():
        with deckdb.opened(hermes_home) as mine, deckdb.opened(other) as theirs:
            assert theirs is not mine

        def elsewhere() -> None:
            with deckdb.opened(hermes_home) as c:
                seen.append(c)

        t = threading.Thread(target=elsewhere)
        t.start()
        t.join()
    assert seen and seen[0] is not mine  # another thread is not bound
    deck.close()


def test_a_replaced_memdeck_db_is_reopened_not_written_through_the_old_file(hermes_home: HermesHome) -> None:
    deck = deckdb.DeckDB(hermes_home)
    with deck.bound(), deckdb.opened(hermes_home) as first:
        first.execute("SELECT 1")
    path = deckdb.db_path(hermes_home)
    for suffix in ("", "-wal", "-shm"):
        try:
            os.unlink(str(path) + suffix)
        except FileNotFoundError:
            pass
    with deck.bound(), deckdb.opened(hermes_home) as second:
        assert second is not first
        assert second.execute("PRAGMA user_version").fetchone()[0] == deckdb.SCHEMA_VERSION
    assert path.exists()
    deck.close()


def test_the_side_files_of_a_held_connection_are_not_rewritten_by_reads(hermes_home: HermesHome) -> None:
    deck = deckdb.DeckDB(hermes_home)
    with deck.bound():
        with deckdb.opened(hermes_home) as c:
            c.execute("SELECT 1")
        shm = deckdb.db_path(hermes_home).with_name(deckdb.DB_NAME + "-shm")
        before = os.stat(shm)
        for _ in range(20):
            with deckdb.opened(hermes_home) as c:
                c.execute("SELECT COUNT(*) FROM journal").fetchone()
        after = os.stat(shm)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    deck.close()
