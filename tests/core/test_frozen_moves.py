"""Issue 39 item 1: Hermes' prompt block is the set of a store's entries in file order, so an entry
the file holds at another place (same text) is moved, never two differences ("removed, still
obeyed" + "added, not seen"). Every consumer of the count reads ``FrozenMemory.differences``:
``context``, ``sessions --stale``, ``watch``'s ``frozen`` event and the dashboard's header and badges."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from memdeck.core.config import load_config
from memdeck.core.context.frozen import diff_frozen, moved_entries
from memdeck.core.home import HermesHome
from tests.helpers.demo import demo_home, demo_home_template  # noqa: F401 - fixtures


def CLEAN(text: str) -> tuple[str, ...]:  # noqa: N802 - a verdict that blocks nothing, named as a constant
    return ()


# ── the property ──────────────────────────────────────────────────────────────


def _text(ident: int, version: int) -> str:
    """Entry ``ident``'s text after ``version`` replacements: every version of one entry is alike
    (a replacement the diff must pair), two entries are unlike (ratio < SIMILAR)."""
    base = chr(ord("a") + ident) * 30
    return base if version == 0 else f"{base} v{version}"


@dataclass
class _Entry:
    ident: int
    version: int = 0

    @property
    def text(self) -> str:
        return _text(self.ident, self.version)


_op = st.one_of(
    st.tuples(st.just("add")),
    st.tuples(st.just("remove"), st.integers(0, 30)),
    st.tuples(st.just("replace"), st.integers(0, 30)),
    st.tuples(st.just("move"), st.integers(0, 30), st.integers(0, 30)),
)


def _apply(n: int, ops: list[tuple]) -> tuple[list[_Entry], list[_Entry]]:
    frozen = [_Entry(i) for i in range(n)]
    disk = [_Entry(e.ident) for e in frozen]
    nxt = n
    for op in ops:
        if op[0] == "add":  # Hermes appends
            disk.append(_Entry(nxt))
            nxt += 1
        elif not disk:
            continue
        elif op[0] == "remove":
            disk.pop(op[1] % len(disk))
        elif op[0] == "replace":  # Hermes' replace keeps the place
            disk[op[1] % len(disk)].version += 1
        else:  # a restore, an undone archive, a revert: the same text elsewhere
            disk.insert(op[2] % len(disk), disk.pop(op[1] % len(disk)))
    return frozen, disk


@settings(max_examples=400, deadline=None)
@given(st.integers(0, 6), st.lists(_op, max_size=12))
def test_the_changes_are_the_set_difference_plus_the_replacements(n: int, ops: list[tuple]) -> None:
    frozen_e, disk_e = _apply(n, ops)
    frozen = [e.text for e in frozen_e]
    disk = [e.text for e in disk_e]
    out = diff_frozen("memory", frozen, disk, CLEAN)

    gone = set(frozen) - set(disk)
    new = set(disk) - set(frozen)
    befores = [c.before for c in out if c.before is not None]
    afters = [c.after for c in out if c.after is not None]
    # every entry on one side only is in exactly one change; an entry on both sides in none
    assert sorted(befores) == sorted(gone)
    assert sorted(afters) == sorted(new)
    replaced = [c for c in out if c.change == "replaced"]
    assert len(out) == len(gone) + len(new) - len(replaced)
    # every replacement made is reported as one: what the session sees -> what the file holds
    made = {(_text(e.ident, 0), e.text) for e in disk_e if e.ident < n and e.version}
    assert made <= {(c.before, c.after) for c in replaced}
    # moves alone are no difference, whatever the order
    if all(op[0] == "move" for op in ops):
        assert out == []
        assert sorted(disk) == sorted(frozen)


def test_a_moved_entry_is_no_difference_and_is_counted_as_moved() -> None:
    f = ["alpha fact", "beta fact", "gamma fact", "delta fact"]
    d = ["alpha fact", "gamma fact", "delta fact", "beta fact"]  # beta put back at the end
    assert diff_frozen("memory", f, d, CLEAN) == []
    assert moved_entries(f, d, CLEAN) == 1
    # removed + the same text re-added elsewhere + a new entry: one difference, not three
    out = diff_frozen("memory", f, ["beta fact", "alpha fact", "gamma fact", "epsilon new"], CLEAN)
    assert [(c.change, c.before, c.after) for c in out] == [("replaced", "delta fact", "epsilon new")]


def test_a_replaced_entry_that_also_moved_is_one_replacement() -> None:
    f = ["deploys on Fridays at 5pm", "kept one", "kept two"]
    d = ["kept one", "kept two", "deploys on Fridays at 4pm"]
    assert [(c.change, c.before, c.after) for c in diff_frozen("memory", f, d, CLEAN)] == [
        ("replaced", "deploys on Fridays at 5pm", "deploys on Fridays at 4pm")]


# ── the demo, as the issue reproduced it ──────────────────────────────────────


def _cli(home: HermesHome, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memdeck.core.cli", "--home", str(home.path), *args],
                          check=False, capture_output=True, text=True, timeout=120)


def _context(home: HermesHome) -> dict:
    res = _cli(home, "context", "--json")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)["memory"]


def _stale(home: HermesHome) -> list[tuple[str, int]]:
    res = _cli(home, "sessions", "--stale", "--json")
    assert res.returncode == 0, res.stderr
    return [(s["session_id"], s["differences"]) for s in json.loads(res.stdout)["sessions"]]


def test_demo_revert_7_takes_context_from_3_to_2_everywhere(demo_home: HermesHome) -> None:  # noqa: F811 - the fixture
    from memdeck.core.cli.common import CliContext
    from memdeck.core.cli.history_cmds import _Watch

    before = _context(demo_home)
    assert before["differences"] == 3
    live = [sid for sid, n in _stale(demo_home) if n == 3]
    assert len(live) == 1
    archived = next(c["before"] for c in before["changes"] if c["change"] == "removed")
    w = _Watch(CliContext(home=demo_home, config=load_config(demo_home)))
    try:
        res = _cli(demo_home, "revert", "7")
        assert res.returncode == 0, res.stderr
        after = _context(demo_home)
        # the archived entry is back (at the end of the file): the session sees it, no difference
        assert after["differences"] == 2
        assert all(archived not in (c["before"], c["after"]) for c in after["changes"])
        assert any("moved, not a difference" in n for n in after["notes"])
        assert (live[0], 2) in _stale(demo_home)
        # fewer differences than before: watch reports no ``frozen`` event
        assert [e for e in w.events(frozenset({"memory"})) if e["event"] == "frozen"] == []
    finally:
        w.close()


def test_demo_archive_then_restore_is_back_to_3(demo_home: HermesHome) -> None:  # noqa: F811 - the fixture
    assert _context(demo_home)["differences"] == 3
    res = _cli(demo_home, "archive", "Logging is structlog", "--json")  # an entry the session sees
    assert res.returncode == 0, res.stderr
    assert _context(demo_home)["differences"] == 4  # removed, still obeyed
    res = _cli(demo_home, "restore", str(json.loads(res.stdout)["archive_id"]))
    assert res.returncode == 0, res.stderr
    after = _context(demo_home)  # back at the end of the file: the session sees it, moved
    assert after["differences"] == 3
    assert all("Logging is structlog" not in (c["before"] or c["after"]) for c in after["changes"])
