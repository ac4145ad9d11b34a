"""Issue 13 #13: a symlinked ``memdeck/`` or ``memdeck/memdeck.db`` is refused, never followed:
memdeck never creates tables in, or chmods, a file outside its own directory."""

from __future__ import annotations

import os
import sqlite3

import pytest

from memdeck.core.config import Config
from memdeck.core.deck import db as deckdb
from memdeck.core.errors import MemdeckError
from memdeck.core.home import HermesHome
from memdeck.core.memory.store import MemoryStore


def _state_db(home: HermesHome):
    p = home.path / "state.db"
    c = sqlite3.connect(p)
    c.execute("CREATE TABLE sessions (id TEXT)")
    c.commit()
    c.close()
    os.chmod(p, 0o644)
    return p


@pytest.mark.parametrize("link", ["db", "dangling", "dir", "wal"])
def test_symlinked_memdeck_db_is_refused(hermes_home: HermesHome, tmp_path, link: str) -> None:
    state = _state_db(hermes_home)
    before = state.read_bytes()
    mdir = hermes_home.path / "memdeck"
    outside = tmp_path / "outside"
    if link == "dir":
        outside.mkdir()
        mdir.symlink_to(outside)
    else:
        mdir.mkdir()
        if link == "db":
            (mdir / "memdeck.db").symlink_to("../state.db")
        elif link == "dangling":
            (mdir / "memdeck.db").symlink_to(outside / "new.db")
        else:
            (mdir / "memdeck.db-wal").symlink_to(outside / "wal")
    with pytest.raises(MemdeckError) as info:
        MemoryStore(hermes_home, Config()).add("memory", "a fact")
    assert "symlink" in str(info.value)
    assert state.read_bytes() == before and (state.stat().st_mode & 0o777) == 0o644
    assert not (outside / "new.db").exists() and not (outside / "wal").exists()
    assert not (outside.is_dir() and any(outside.iterdir()))
    assert not hermes_home.memory_file("memory").exists()
    with pytest.raises(deckdb.DeckDBError):
        deckdb.connect(hermes_home)
