"""Adversarial review of the memory core: each test pins a bug that was found and fixed."""

from __future__ import annotations

import functools
import sqlite3

import pytest

from memdeck.core.deck import db as deckdb
from memdeck.core.errors import MemdeckError
from memdeck.core.home import HermesHome
from memdeck.core.memory.store import MemoryStore
from memdeck.core.undo import undo


def raw(home: HermesHome, target: str = "memory") -> bytes:
    p = home.memory_file(target)
    return p.read_bytes() if p.exists() else b""


def _unusable_db(home: HermesHome, how: str) -> None:
    path = deckdb.db_path(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    if how == "corrupt":
        path.write_bytes(b"this is not a database" * 300)
    else:
        path.mkdir()


@pytest.mark.parametrize("how", ["corrupt", "directory"])
@pytest.mark.parametrize("op", ["add", "replace", "remove", "edit", "move", "normalize", "batch"])
def test_unusable_memdeck_db_refuses_before_the_file_changes(hermes_home: HermesHome, how: str, op: str) -> None:
    """A write whose journal cannot be recorded must not happen: before, the file was changed
    and then the CLI reported an error, so the user believed nothing was written."""
    drifted = "alpha fact\n§\nbeta fact\n§\n\ngamma fact"  # normalize needs something to rewrite
    hermes_home.memory_file("memory").write_text(drifted if op == "normalize" else "alpha fact\n§\nbeta fact")
    hermes_home.memory_file("user").write_text("user fact")
    s = MemoryStore(hermes_home)
    _unusable_db(hermes_home, how)
    before_m, before_u = raw(hermes_home), raw(hermes_home, "user")
    calls = {
        "add": lambda: s.add("memory", "delta fact"),
        "replace": lambda: s.replace("memory", "alpha", "alpha fact v2"),
        "remove": lambda: s.remove("memory", "beta"),
        "edit": lambda: s.edit("beta", "beta fact v2"),
        "move": lambda: s.move("memory", "beta", "user"),
        "normalize": lambda: s.normalize("memory"),
        "batch": lambda: s.apply_batch("memory", [{"action": "add", "content": "delta fact"}]),
    }
    with pytest.raises(MemdeckError):
        calls[op]()
    assert raw(hermes_home) == before_m and raw(hermes_home, "user") == before_u


def test_locked_memdeck_db_is_a_clear_error_and_nothing_is_written(hermes_home: HermesHome,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """memdeck.db held by another writer past the busy timeout: a MemdeckError (not a raw
    sqlite3.OperationalError traceback) and the file is untouched."""
    s = MemoryStore(hermes_home)
    s.add("memory", "alpha fact")
    monkeypatch.setattr(deckdb, "connect", functools.partial(deckdb.connect, timeout=0.2))
    other = sqlite3.connect(str(deckdb.db_path(hermes_home)), isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        before = raw(hermes_home)
        for call in (lambda: s.add("memory", "beta fact"), lambda: s.remove("memory", "alpha"),
                     lambda: s.archive("memory", "alpha")):
            with pytest.raises(MemdeckError) as info:
                call()
            assert "locked" in str(info.value)
            assert raw(hermes_home) == before
    finally:
        other.execute("ROLLBACK")
        other.close()


def _stage_raw(home: HermesHome, pid: str, record: object) -> None:
    import json

    home.pending_dir.mkdir(parents=True, exist_ok=True)
    (home.pending_dir / f"{pid}.json").write_text(json.dumps(record))


@pytest.mark.parametrize("operations", [5, 2.5, True, {"action": "add"}])
def test_pending_batch_whose_operations_is_not_a_list_is_malformed_not_a_crash(hermes_home: HermesHome,
                                                                               operations: object) -> None:
    from memdeck.core.errors import Refused
    from memdeck.core.memory.pending import approve, list_pending

    _stage_raw(hermes_home, "bbbb0001", {"id": "bbbb0001", "payload": {"action": "batch", "target": "memory",
                                                                       "operations": operations}})
    (rec,) = list_pending(hermes_home)  # raised TypeError: 'int' object is not iterable
    assert rec.malformed and "operations" in rec.malformed
    with pytest.raises(Refused) as info:
        approve(hermes_home, None, "bbbb0001")
    assert info.value.code == "malformed" and not hermes_home.memory_file("memory").exists()


@pytest.mark.parametrize("op", [{"action": "add", "content": {"x": 1}}, {"action": "add", "content": 42},
                                {"action": "replace", "old_text": ["a"], "content": "new"},
                                {"action": "remove", "old_text": 7}])
def test_pending_batch_op_with_non_string_fields_is_malformed(hermes_home: HermesHome, op: dict) -> None:
    """Hermes' replay would fail on these (``.strip()`` of a non-str); memdeck used to write
    ``str(value)`` (e.g. the entry ``{'x': 1}``) into MEMORY.md."""
    from memdeck.core.errors import Refused
    from memdeck.core.memory.pending import approve, list_pending

    hermes_home.memory_file("memory").write_text("a fact")
    _stage_raw(hermes_home, "bbbb0002", {"id": "bbbb0002", "payload": {"action": "batch", "target": "memory",
                                                                       "operations": [op]}})
    (rec,) = list_pending(hermes_home)
    assert rec.malformed
    with pytest.raises(Refused):
        approve(hermes_home, None, "bbbb0002")
    assert raw(hermes_home) == b"a fact"
    assert (hermes_home.pending_dir / "bbbb0002.json").exists()


@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan", "1e400"])
def test_config_limit_infinity_or_nan_falls_back_with_a_warning(hermes_home: HermesHome, value: str) -> None:
    """``int(float('inf'))`` raised OverflowError out of load_config, a traceback on every command."""
    from memdeck.core.config import DEFAULT_MEMORY_CHAR_LIMIT, load_config

    hermes_home.config_path.write_text(f"memory:\n  memory_char_limit: {value}\nmemlock:\n  max_slots: {value}\n")
    cfg = load_config(hermes_home)
    assert cfg.memory_char_limit == DEFAULT_MEMORY_CHAR_LIMIT and cfg.memlock.max_slots == 8
    assert any("memory_char_limit" in w for w in cfg.warnings)


def test_undo_of_an_already_undone_change_is_refused_even_if_the_file_matches_again(hermes_home: HermesHome) -> None:
    """Two `memdeck undo` racing read the same rows; the second ran after the entry had been
    legitimately re-added (e.g. by Hermes) and removed it again: someone else's change reverted."""
    from memdeck.core.deck import journal
    from memdeck.core.errors import Refused

    s = MemoryStore(hermes_home)
    s.add("memory", "alpha fact")
    s.add("memory", "beta fact")
    rows = journal.last_undoable(hermes_home, "memory")  # both racers see the add of beta
    s.undo_rows(rows)
    hermes_home.memory_file("memory").write_text("alpha fact\n§\nbeta fact")  # re-added by someone else
    with pytest.raises(Refused) as info:
        s.undo_rows(rows)
    assert info.value.code == "conflict"
    assert raw(hermes_home) == "alpha fact\n§\nbeta fact".encode()


def test_undo_of_normalize_restores_the_original_bytes(hermes_home: HermesHome) -> None:
    """Undo of normalize rewrote the canonical text again and said 'Undid normalize'."""

    drifted = "alpha fact\n§\n\nbeta fact\n\n"
    hermes_home.memory_file("memory").write_text(drifted)
    s = MemoryStore(hermes_home)
    assert s.normalize("memory").changed
    assert raw(hermes_home) == "alpha fact\n§\nbeta fact".encode()
    undo(hermes_home, None)
    assert raw(hermes_home) == drifted.encode()


def test_memories_path_is_a_file_refuses_cleanly(hermes_home: HermesHome) -> None:
    """``memories`` is a regular file: FileExistsError from the lock's mkdir reached the CLI."""
    import shutil

    from memdeck.core.errors import MemdeckError

    shutil.rmtree(hermes_home.memories_dir)
    hermes_home.memories_dir.write_text("not a directory")
    with pytest.raises(MemdeckError):
        MemoryStore(hermes_home).add("memory", "alpha fact")
    assert hermes_home.memories_dir.read_text() == "not a directory"


def test_dangling_symlink_target_is_not_created_outside_the_home(hermes_home: HermesHome, tmp_path) -> None:
    """A MEMORY.md symlink into a missing directory: memdeck created that directory tree (Hermes'
    atomic_replace fails instead) and wrote memory there; now a clear refusal, nothing created."""
    from memdeck.core.errors import Refused

    elsewhere = tmp_path / "gone" / "deeper"
    hermes_home.memory_file("memory").symlink_to(elsewhere / "MEMORY.md")
    with pytest.raises(Refused) as info:
        MemoryStore(hermes_home).add("memory", "alpha fact")
    assert info.value.code == "unwritable"
    assert not (tmp_path / "gone").exists()
    assert not [p for p in hermes_home.memories_dir.iterdir() if p.name.endswith(".tmp")]


def test_move_whose_source_write_fails_leaves_both_files_as_they_were(hermes_home: HermesHome,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import memdeck.core.memory.store as memory_mod  # stages every memory write
    from memdeck.core.errors import Refused

    hermes_home.memory_file("memory").write_text("alpha fact\n§\nbeta fact")
    hermes_home.memory_file("user").write_text("user fact")
    before_m, before_u = raw(hermes_home), raw(hermes_home, "user")
    real = memory_mod.stage_replace

    def failing(path, data, token):
        if path.name == "MEMORY.md":
            raise OSError(28, "No space left on device")
        return real(path, data, token)

    monkeypatch.setattr(memory_mod, "stage_replace", failing)
    with pytest.raises(Refused) as info:
        MemoryStore(hermes_home).move("memory", "beta", "user")
    assert info.value.code == "unwritable"
    assert raw(hermes_home) == before_m and raw(hermes_home, "user") == before_u
    assert not list(hermes_home.memories_dir.glob(".mem_*")), "a staged file was left behind"
