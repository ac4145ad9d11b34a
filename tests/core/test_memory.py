"""core.memory: format, selectors, every operation, every refusal leaves the file byte-identical."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memdeck.core.config import Config
from memdeck.core.errors import LockTimeout, Refused
from memdeck.core.fsio import file_lock
from memdeck.core.home import HermesHome
from memdeck.core.memory.entries import (
    ENTRY_DELIMITER,
    entry_id,
    find_entry,
    noncanonical_reason,
    parse_entries,
    serialize_entries,
    usage_chars,
)
from memdeck.core.memory.reader import read_memory
from memdeck.core.memory.store import MemoryStore
from tests.helpers.memory import HOSTILE, write_raw

SMALL = Config(memory_char_limit=60, user_char_limit=40)


@pytest.fixture
def store(hermes_home: HermesHome) -> MemoryStore:
    return MemoryStore(hermes_home, Config(), lock_timeout=2.0)


def raw(home: HermesHome, target: str = "memory") -> bytes:
    p = home.memory_file(target)
    return p.read_bytes() if p.exists() else b"<missing>"


# -- format ---------------------------------------------------------------------------------
def test_parse_matches_hermes_rules() -> None:
    assert parse_entries("First fact\n§\nSecond fact\nmultiline") == ["First fact", "Second fact\nmultiline"]
    assert parse_entries("  a  \n§\n\n§\n a \n§\nb§c") == ["a", "b§c"]  # strip, drop empty, dedupe
    assert parse_entries("") == [] and parse_entries("   \n") == [] and parse_entries(None) == []
    assert serialize_entries(["a", "b"]) == "a\n§\nb" and serialize_entries([]) == ""
    assert usage_chars(["ab", "c"]) == 2 + len(ENTRY_DELIMITER) + 1


def test_drift_reason_is_hermes_guard() -> None:
    assert noncanonical_reason("a\n§\nb", 10) is None
    assert noncanonical_reason("a\n\n§\nb", 10) is not None  # does not round-trip
    assert noncanonical_reason("a\n§\na", 10) is None  # duplicates alone are not drift (Hermes does not dedupe here)
    assert "longer" in (noncanonical_reason("x" * 11, 10) or "")


def test_entry_id_is_stable_short_hash() -> None:
    assert entry_id("First fact") == entry_id("First fact") and len(entry_id("x")) == 8
    assert entry_id("a") != entry_id("b")


strategy_entry = st.text(min_size=1, max_size=40).map(str.strip).filter(lambda s: bool(s) and ENTRY_DELIMITER not in f"\n{s}\n")


@settings(max_examples=300)
@given(st.lists(strategy_entry, max_size=8, unique=True))
def test_round_trip_for_any_entry_list_hermes_could_write(entries: list[str]) -> None:
    text = serialize_entries(entries)
    assert parse_entries(text) == entries
    assert serialize_entries(parse_entries(text)) == text
    assert noncanonical_reason(text, 10_000) is None


def test_tolerant_read_of_bom_and_crlf(hermes_home: HermesHome, store: MemoryStore) -> None:
    write_raw(hermes_home, "memory", b"\xef\xbb\xbfa\r\n\xc2\xa7\r\nb")
    st_ = read_memory(hermes_home, None, "memory")
    assert [e.text for e in st_.entries] == ["a", "b"] and st_.drift is None
    store.add("memory", "c")
    assert raw(hermes_home) == "a\n§\nb\n§\nc".encode()  # never writes BOM or CRLF


# -- selectors ------------------------------------------------------------------------------
def test_selector_priority_and_ambiguity() -> None:
    entries = ["alpha beta", "alpha", "gamma"]
    assert find_entry(entries, "alpha") == 1  # exact whole entry beats substring
    assert find_entry(entries, entry_id("gamma")) == 2
    assert find_entry(entries, entry_id("gamma")[:4]) == 2
    assert find_entry(entries, "amm") == 2
    with pytest.raises(Refused) as ei:
        find_entry(["red apple", "green apple", "pear"], "apple")
    assert ei.value.code == "ambiguous" and len(ei.value.details["candidates"]) == 2
    with pytest.raises(Refused) as ei:
        find_entry(entries, "zzz")
    assert ei.value.code == "no_match"
    with pytest.raises(Refused) as ei:
        find_entry(entries, "  ")
    assert ei.value.code == "empty"


# -- operations ------------------------------------------------------------------------------
def test_add_replace_remove_edit(hermes_home: HermesHome, store: MemoryStore) -> None:
    r = store.add("memory", "  First fact  ")
    assert r.changed and r.entry_id == entry_id("First fact") and r.journal_id
    assert store.add("memory", "First fact").changed is False
    store.add("memory", "Second fact")
    store.replace("memory", "Second", "Second fact, revised")
    store.edit(entry_id("First fact"), "First fact, edited")
    assert raw(hermes_home) == "First fact, edited\n§\nSecond fact, revised".encode()
    store.remove("memory", "revised")
    assert raw(hermes_home) == b"First fact, edited"
    oct_mode = oct(os.stat(hermes_home.memory_file("memory")).st_mode & 0o777)
    assert oct_mode == "0o600"  # mkstemp-style temp (Hermes' files are 0600 too)


def test_move_between_targets(hermes_home: HermesHome, store: MemoryStore) -> None:
    store.add("memory", "Likes tea")
    r = store.move(None, "tea", "user")
    assert r.details["source"] == "memory"
    assert raw(hermes_home, "memory") == b"" and raw(hermes_home, "user") == b"Likes tea"
    with pytest.raises(Refused) as ei:
        store.move("user", "tea", "user")
    assert ei.value.code == "same_target"


def test_symlinked_target_stays_a_symlink(hermes_home: HermesHome, store: MemoryStore, tmp_path: Path) -> None:
    real = tmp_path / "real.md"
    real.write_text("a")
    link = hermes_home.memory_file("memory")
    link.symlink_to(real)
    store.add("memory", "b")
    assert link.is_symlink() and real.read_text() == "a\n§\nb"


def test_stale_temps_are_removed_after_a_write(hermes_home: HermesHome, store: MemoryStore) -> None:
    d = hermes_home.memories_dir
    (d / ".mem_deadbeef.tmp").write_text("partial")
    store.add("memory", "x")
    assert not list(d.glob(".mem_*.tmp"))


def test_fresh_temp_kept_while_other_target_is_locked(hermes_home: HermesHome, store: MemoryStore) -> None:
    d = hermes_home.memories_dir
    (d / ".mem_cafebabe.tmp").write_text("hermes is writing USER.md")
    with file_lock(hermes_home.memory_file("user")):
        store.add("memory", "x")
        assert (d / ".mem_cafebabe.tmp").exists()
    store.add("memory", "y")
    assert not (d / ".mem_cafebabe.tmp").exists()


def test_lock_timeout_is_clear(hermes_home: HermesHome) -> None:
    s = MemoryStore(hermes_home, Config(), lock_timeout=0.2)
    with file_lock(hermes_home.memory_file("memory")), pytest.raises(LockTimeout):
        s.add("memory", "x")
    assert raw(hermes_home) == b"<missing>"


def test_batch_is_all_or_nothing_with_hermes_semantics(hermes_home: HermesHome, store: MemoryStore) -> None:
    store.add("memory", "alpha one")
    store.add("memory", "beta two")
    r = store.apply_batch("memory", [{"action": "remove", "old_text": "alpha"}, {"action": "add", "content": "gamma"},
                                     {"action": "add", "content": "gamma"}])
    assert raw(hermes_home) == "beta two\n§\ngamma".encode() and r.op == "batch"
    before = raw(hermes_home)
    with pytest.raises(Refused) as ei:
        store.apply_batch("memory", [{"action": "add", "content": "delta"}, {"action": "remove", "old_text": "nope"}])
    assert ei.value.code == "no_match" and "all-or-nothing" in ei.value.reason
    assert raw(hermes_home) == before


def test_normalize_rewrites_canonical_and_keeps_backup(hermes_home: HermesHome, store: MemoryStore) -> None:
    write_raw(hermes_home, "memory", "a\n\n§\n\nb\n§\na")
    with pytest.raises(Refused) as ei:
        store.add("memory", "c")
    assert ei.value.code == "drift" and Path(ei.value.details["drift_backup"]).read_text() == "a\n\n§\n\nb\n§\na"
    r = store.normalize("memory")
    assert r.backup and Path(r.backup).exists()
    assert raw(hermes_home) == "a\n§\nb".encode()
    assert store.normalize("memory").changed is False


def test_a_refusal_repeated_keeps_one_snapshot_of_the_same_bytes(hermes_home: HermesHome, store: MemoryStore,
                                                                  monkeypatch) -> None:
    """Each refused write of a drifted file snapshots it (Hermes' drift guard); the same bytes are
    snapshotted once, however often the write is retried (a 50 MB file wrote 50 MB per refusal)."""
    import time as _time

    write_raw(hermes_home, "memory", "a\n\n§\n\nb")
    clock = iter(range(1_800_000_000, 1_800_000_100))
    monkeypatch.setattr(_time, "time", lambda: float(next(clock)))
    baks = set()
    for _ in range(4):
        with pytest.raises(Refused) as ei:
            store.add("memory", "c")
        baks.add(ei.value.details["drift_backup"])
    assert len(baks) == 1 and sorted(p.name for p in hermes_home.memories_dir.glob("MEMORY.md.bak.*")) == [
        Path(next(iter(baks))).name]
    write_raw(hermes_home, "memory", "a\n\n§\n\nb changed")  # other bytes: a new snapshot
    with pytest.raises(Refused) as ei:
        store.add("memory", "c")
    assert ei.value.details["drift_backup"] not in baks
    assert Path(ei.value.details["drift_backup"]).read_text() == "a\n\n§\n\nb changed"


def test_normalize_refuses_an_entry_over_the_limit(hermes_home: HermesHome) -> None:
    s = MemoryStore(hermes_home, SMALL)
    write_raw(hermes_home, "memory", "x" * 61)
    with pytest.raises(Refused) as ei:
        s.normalize("memory")
    assert ei.value.code == "limit" and ei.value.details["entries"][0]["chars"] == 61
    assert raw(hermes_home) == b"x" * 61


# -- refusals leave the file byte-identical --------------------------------------------------
def _refusals(s: MemoryStore) -> list:
    return [
        lambda: s.add("memory", ""),
        lambda: s.add("memory", HOSTILE["prompt_injection"]),
        lambda: s.add("memory", "y" * 61),
        lambda: s.replace("memory", "nothing-matches-this", "z"),
        lambda: s.replace("memory", "e", "w" * 70),
        lambda: s.replace("memory", "e", HOSTILE["ssh_access"]),
        lambda: s.remove("memory", ""),
        lambda: s.edit("0000", "x"),
        lambda: s.move(None, "nothing-matches-this", "user"),
        lambda: s.apply_batch("memory", []),
        lambda: s.apply_batch("memory", [{"action": "add", "content": HOSTILE["hermes_env"]}]),
        lambda: s.apply_batch("memory", [{"action": "frob"}]),
        lambda: s.restore(999),
    ]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=st.lists(strategy_entry.filter(lambda s: len(s) < 15), max_size=3, unique=True))
def test_every_refusal_path_leaves_the_file_byte_identical(hermes_home: HermesHome, entries: list[str]) -> None:
    s = MemoryStore(hermes_home, SMALL, lock_timeout=1.0)
    data = serialize_entries(entries).encode()
    write_raw(hermes_home, "memory", data)
    write_raw(hermes_home, "user", b"u")
    for attempt in _refusals(s):
        with pytest.raises(Refused):
            attempt()
        assert raw(hermes_home) == data and raw(hermes_home, "user") == b"u"


def test_overflow_refusal_lists_entries_and_usage(hermes_home: HermesHome) -> None:
    s = MemoryStore(hermes_home, SMALL)
    s.add("memory", "a" * 30)
    with pytest.raises(Refused) as ei:
        s.add("memory", "b" * 30)
    d = ei.value.details
    assert ei.value.code == "overflow" and d["usage"] == "30/60"
    assert d["current_entries"] == [{"id": entry_id("a" * 30), "text": "a" * 30, "chars": 30, "threats": []}]


def test_unreadable_file_refuses_every_write_and_is_never_wiped(hermes_home: HermesHome, store: MemoryStore) -> None:
    bad = b"good\n\xa7\nbad \xff\xfe bytes"
    write_raw(hermes_home, "memory", bad)
    state = read_memory(hermes_home, None, "memory")
    assert state.error and state.entries == ()
    for op in (lambda: store.add("memory", "x"), lambda: store.remove("memory", "good"),
               lambda: store.normalize("memory"), lambda: store.move("memory", "good", "user"),
               lambda: store.apply_batch("memory", [{"action": "add", "content": "x"}])):
        with pytest.raises(Refused) as ei:
            op()
        assert ei.value.code == "unreadable"
        assert raw(hermes_home) == bad


def test_read_memory_never_raises_on_a_directory(hermes_home: HermesHome) -> None:
    hermes_home.memory_file("user").mkdir()
    st_ = read_memory(hermes_home, None, "user")
    assert st_.error and st_.entries == ()


def test_read_memory_reports_usage_like_hermes(hermes_home: HermesHome) -> None:
    write_raw(hermes_home, "memory", "a" * 1100)
    st_ = read_memory(hermes_home, Config(), "memory")
    assert (st_.chars, st_.limit, st_.pct, st_.usage) == (1100, 2200, 50, "1,100/2,200")
    write_raw(hermes_home, "memory", "a\n§\n" + HOSTILE["c2_explicit"])
    assert read_memory(hermes_home, Config(), "memory").entries[1].threats == ("c2_explicit",)
