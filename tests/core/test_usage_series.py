"""core/history/usage.py: a memory file's usage after each recorded change, reconstructed from
the change history (issue 26), checked against the usage the file really had at each step."""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memdeck.core import history
from memdeck.core.config import Config
from memdeck.core.deck import db as deckdb
from memdeck.core.history.usage import UsagePoint, usage_series
from memdeck.core.home import HermesHome
from memdeck.core.memory.entries import parse_entries, usage_chars
from memdeck.core.memory.store import MemoryStore
from tests.helpers.memory import write_raw


def _usage(home: HermesHome, target: str = "memory") -> int:
    return usage_chars(parse_entries(home.memory_file(target).read_text(encoding="utf-8")))


def test_every_writer_s_change_is_a_point_with_the_usage_the_file_had(hermes_home: HermesHome) -> None:
    write_raw(hermes_home, "memory", "one\n§\ntwo")
    history.observe(hermes_home)  # the baseline: no change yet
    seen = [(time.time(), _usage(hermes_home))]
    s = MemoryStore(hermes_home, Config(), actor="cli")
    s.add("memory", "a third entry, longer than the others")  # journaled: chained at its journal time
    history.observe(hermes_home)
    seen.append((time.time(), _usage(hermes_home)))
    write_raw(hermes_home, "memory", "one\n§\nTWO, edited by hand\n§\na third entry, longer than the others")
    history.observe(hermes_home)
    seen.append((time.time(), _usage(hermes_home)))
    s.remove("memory", "one")
    history.observe(hermes_home)
    seen.append((time.time(), _usage(hermes_home)))

    series = usage_series(hermes_home, "memory")
    assert series.complete and series.note == "" and series.target == "memory"
    chars = [p.chars for p in series.points]
    assert chars[0] == seen[0][1] == len("one\n§\ntwo") and chars[-1] == seen[-1][1]
    # before the first change, after each of the three, and (later) as memdeck last saw it
    assert series.points[0].change_id is None and len([p for p in series.points if p.change_id]) == 3
    assert [p.time for p in series.points] == sorted(p.time for p in series.points)
    assert series.points[-1].change_id is not None or series.points[-1].chars == series.points[-2].chars
    # the usage the file had after each observation is the series' value at that time
    for when, used in seen:
        at = [p for p in series.points if p.time <= when][-1]
        assert at.chars == used, (when, used, series.points)
    assert series.points[-1].entries == len(parse_entries(hermes_home.memory_file("memory").read_text()))


def test_no_history_yet_is_an_empty_series_that_says_why(hermes_home: HermesHome) -> None:
    got = usage_series(hermes_home, "user")
    assert got.points == () and "memdeck.db does not exist" in got.note
    write_raw(hermes_home, "memory", "x")
    history.observe(hermes_home, now=5.0)
    got = usage_series(hermes_home, "user")  # USER.md does not exist: seen as empty
    assert got.points == (UsagePoint(5.0, 0, 0),) and got.complete
    conn = deckdb.connect(hermes_home)
    conn.execute("DELETE FROM history_seen WHERE path = 'memories/USER.md'")
    got = usage_series(hermes_home, "user", conn=conn)
    assert got.points == () and "has not seen USER.md" in got.note
    got = usage_series(hermes_home, "memory")  # seen once, never changed: one point, now
    assert got.points == (UsagePoint(5.0, 1, 1),) and got.complete
    with pytest.raises(ValueError):
        usage_series(hermes_home, "both")


def test_a_long_history_is_cut_at_the_limit_and_says_so(hermes_home: HermesHome) -> None:
    write_raw(hermes_home, "memory", "e0")
    history.observe(hermes_home, now=0.0)
    for i in range(1, 8):
        write_raw(hermes_home, "memory", "\n§\n".join(f"e{j}" for j in range(i + 1)))
        history.observe(hermes_home, now=float(i))
    full = usage_series(hermes_home, "memory")
    assert [p.chars for p in full.points] == [usage_chars([f"e{j}" for j in range(i + 1)]) for i in range(8)]
    cut = usage_series(hermes_home, "memory", limit=3)
    assert not cut.complete and "3 changes back" in cut.note
    assert [p.chars for p in cut.points] == [p.chars for p in full.points][-4:]


def test_a_row_that_does_not_chain_ends_the_series_there(hermes_home: HermesHome) -> None:
    write_raw(hermes_home, "memory", "a")
    history.observe(hermes_home, now=1.0)
    for i, text in enumerate(("a\n§\nb", "a\n§\nb\n§\nc", "a\n§\nb\n§\nc\n§\nd"), 2):
        write_raw(hermes_home, "memory", text)
        history.observe(hermes_home, now=float(i))
    conn = deckdb.connect(hermes_home)
    conn.execute("UPDATE history SET after = 'not there' WHERE after = 'c'")  # a damaged row
    got = usage_series(hermes_home, "memory", conn=conn)
    assert not got.complete and "does not chain" in got.note
    assert [p.time for p in got.points] == [3.0, 4.0]  # after the damaged change, and the newest
    assert got.points[-1].chars == usage_chars(["a", "b", "c", "d"])


OPS = st.lists(st.tuples(st.sampled_from(["add", "remove", "replace"]), st.integers(0, 30),
                         st.text("abcdefgh §\n", min_size=1, max_size=40)), min_size=1, max_size=25)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(OPS)
def test_the_series_matches_the_usage_after_every_observation(tmp_path_factory, ops) -> None:
    home = HermesHome(tmp_path_factory.mktemp("h") / "home")
    (home.path / "memories").mkdir(parents=True)
    entries: list[str] = ["start"]
    write_raw(home, "memory", "\n§\n".join(entries))
    history.observe(home, now=0.0)
    truth = [(0.0, usage_chars(entries))]
    for t, (op, k, text) in enumerate(ops, 1):
        text = text.replace("\n§\n", " ").strip() or "x"
        if op == "add" and text not in entries:
            entries.append(text)
        elif op == "remove" and entries:
            entries.pop(k % len(entries))
        elif op == "replace" and entries and text not in entries:
            entries[k % len(entries)] = text
        write_raw(home, "memory", "\n§\n".join(entries))
        history.observe(home, now=float(t))
        truth.append((float(t), usage_chars(parse_entries("\n§\n".join(entries)))))
    series = usage_series(home, "memory")
    assert series.complete
    for when, used in truth:
        at = [p for p in series.points if p.time <= when][-1]
        assert at.chars == used, (when, used, series.points)


def test_the_snapshot_reads_the_usage_history_again_only_when_a_memory_file_changed(tmp_path) -> None:
    """Work proportional to what changed: an appended state.db message or an unchanged home keeps
    the series; a change of MEMORY.md (by any writer) gives a series with the new usage."""
    from memdeck.core.config import load_config
    from memdeck.core.demo import DEMO_NOW, build_demo_home
    from memdeck.core.overview.reader import HomeReader

    home = build_demo_home(tmp_path / "demo", seed=7, now=DEMO_NOW)
    cfg = load_config(home)
    reader = HomeReader(home, cfg)
    first = reader.read(now=DEMO_NOW)
    series = first.usage_history["memory"]
    assert series.complete and len(series.points) >= 3 and series.points[-1].chars == first.memory["memory"].chars
    assert first.usage_history["user"].points[-1].chars == first.memory["user"].chars
    store = MemoryStore(home, cfg, actor="cli")
    store.remove("memory", first.memory["memory"].entries[0].text)
    second = reader.read(now=DEMO_NOW + 5)
    assert second.usage_history["memory"] is not series
    assert second.usage_history["memory"].points[-1].chars == second.memory["memory"].chars < series.points[-1].chars
    assert second.usage_history["user"] == first.usage_history["user"]
    import sqlite3

    from memdeck.core.sessions import hermes_schema as hs

    conn = sqlite3.connect(home.state_db)
    hs.append_message(conn, second.session_id, "user", "one more message")
    conn.commit()
    conn.close()
    third = reader.read(now=DEMO_NOW + 6)
    assert third.usage_history is second.usage_history  # state.db changed, memory did not
