"""Issue 22 Majors 1 and 2: a memdeck write killed at every crash point, then a real Hermes 0.19
``MemoryStore`` write on the same file, then the next memdeck command.

For every scenario below a dry run counts the durable steps of the memdeck operation
(tests/crashpoints.py); for every step N a fresh home gets the setup, the operation is killed
(``os._exit``) before step N, and Hermes 0.19 itself (``tools.memory_tool.MemoryStore``, the
interop venv's package, in this process: its own sidecar flock, reload under the lock and atomic
replace) adds an entry to every file the operation touches -- the repro's "deploy freeze on
Fridays" -- or, in the second variant, removes an entry the operation does not touch. Then two
runs of the same kill:

* **run A** -- the next memdeck command is an unrelated write on the same file (it settles the
  interrupted write under the lock), then the operation is retried (the repro's second
  ``approve``), then Hermes' own ``/memory approve`` is tried on the record:
  (a) a pending record is applied at most once: the final entries are exactly "the operation
  once, plus Hermes' write, plus the next command" or, when the kill came before the file write,
  "Hermes' write plus the next command" with the record still staged; at most one ``done``
  approval row; Hermes finds no record to replay once memdeck may have applied it;
  (b) a moved entry is in exactly one file; (c) no row is left ``intent`` or ``unknown``, and
  the operation's rows are ``done`` exactly when their effect is in the files.
* **run B** -- a dashboard observes the history after the kill, after Hermes' write, and after
  the next command, which is ``undo``: (c) as above; (d) when the operation happened, the undo
  takes exactly its effect out (Hermes' entry stays) and History attributes the operation's
  changes to memdeck (its actor, journal id and op), Hermes' to another writer.

The checks use only memdeck's public operations and the journal's columns (the entry-level
effect is recomputed here), so the same file runs against the code before issue 22, where it
fails (the repro among the failures).
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from memdeck.core import history, undo
from memdeck.core.config import Config
from memdeck.core.deck import db as deckdb
from memdeck.core.errors import Refused
from memdeck.core.home import TARGETS, HermesHome
from memdeck.core.memory import pending
from memdeck.core.memory.entries import parse_entries, serialize_entries
from memdeck.core.memory.store import MemoryStore
from tests.conftest import requires_hermes
from tests.crashpoints import CRASH_STATUS, crash_points, run_in_child

pytestmark = [requires_hermes, pytest.mark.interop]

CFG = Config()
PID = "dddd0001"
HERMES_ADDS = "deploy freeze on Fridays"
KEEP = {"memory": "keep: memory note", "user": "keep: user note"}
LATER = "a later note from the next command"

# ----------------------------------------------------------------------------- the scenarios


def _ms(home: HermesHome) -> MemoryStore:
    return MemoryStore(home, CFG)


BASE = {"memory": ["deploy on Tuesdays", "alpha fact", "beta fact", KEEP["memory"]], "user": ["gamma fact", KEEP["user"]]}


def _base(home: HermesHome) -> None:
    """The files as Hermes would have written them (canonical; not journaled by memdeck)."""
    for t, es in BASE.items():
        home.memory_file(t).write_text(serialize_entries(es), encoding="utf-8")
    with deckdb.opened(home):  # memdeck.db exists (a dashboard looked), so every run counts the same steps
        pass


def _staged(payload: dict[str, Any]) -> Callable[[HermesHome], None]:
    def setup(home: HermesHome) -> None:
        _base(home)
        d = home.pending_dir
        d.mkdir(parents=True, exist_ok=True)
        rec = {"id": PID, "subsystem": "memory", "action": payload.get("action"), "summary": "s",
               "origin": "background_review", "created_at": 1.0, "payload": payload}
        (d / f"{PID}.json").write_text(json.dumps(rec, ensure_ascii=False, indent=2))
    return setup


def _archived(home: HermesHome) -> None:
    _base(home)
    _ms(home).archive("memory", "beta fact")


def _approve(home: HermesHome) -> Any:
    return pending.approve(home, CFG, PID)


def _restore(home: HermesHome) -> Any:
    from memdeck.core.deck import archive
    items = archive.items(home)
    return _ms(home).restore(items[0].archive_id) if items else None


@dataclass(frozen=True)
class Scenario:
    name: str
    setup: Callable[[HermesHome], None]
    op: Callable[[HermesHome], Any]
    targets: tuple[str, ...]            # the files the operation touches
    approval: bool = False


SCENARIOS = [
    # the repro: a pending `remove "deploy"` (Hermes 0.19 substring semantics)
    Scenario("approve-remove", _staged({"action": "remove", "target": "memory", "old_text": "deploy"}), _approve,
             ("memory",), True),
    Scenario("approve-add", _staged({"action": "add", "target": "memory", "content": "staged fact"}), _approve,
             ("memory",), True),
    Scenario("approve-replace", _staged({"action": "replace", "target": "memory", "old_text": "alpha",
                                         "content": "alpha fact v2"}), _approve, ("memory",), True),
    Scenario("approve-batch", _staged({"action": "batch", "target": "memory", "operations": [
        {"action": "add", "content": "batched fact"}, {"action": "remove", "old_text": "beta"}]}), _approve,
        ("memory",), True),
    # a record as Hermes 0.22 stages it: the destructive op pinned to the entry reviewed
    Scenario("approve-pinned-patch", _staged({"action": "patch", "target": "memory", "old_text": "Tuesdays",
                                              "content": "Wednesdays", "matched_entry": "deploy on Tuesdays"}),
             _approve, ("memory",), True),
    Scenario("add", _base, lambda h: _ms(h).add("memory", "delta fact"), ("memory",)),
    Scenario("replace", _base, lambda h: _ms(h).replace("memory", "beta fact", "beta fact v2"), ("memory",)),
    Scenario("remove", _base, lambda h: _ms(h).remove("memory", "beta fact"), ("memory",)),
    Scenario("move", _base, lambda h: _ms(h).move("memory", "beta fact", "user"), ("user", "memory")),
    Scenario("archive", _base, lambda h: _ms(h).archive("memory", "beta fact"), ("memory",)),
    Scenario("restore", _archived, _restore, ("memory",)),
]

#: how Hermes writes between the kill and the next memdeck command: an entry added to every
#: touched file (the repro), or an entry the operation does not touch removed from it
HERMES_WRITES = ("add", "remove-other")

# ----------------------------------------------------------------------------- Hermes 0.19, for real


def hermes_write(home: HermesHome, target: str, how: str) -> dict[str, Any]:
    """One write by Hermes 0.19's own ``MemoryStore`` on ``home`` (HERMES_HOME is how Hermes
    finds it, resolved on every call)."""
    from tools.memory_tool import MemoryStore as HermesStore

    saved = os.environ.get("HERMES_HOME")
    os.environ["HERMES_HOME"] = str(home.path)
    try:
        store = HermesStore()
        store.load_from_disk()
        if how == "add":
            return store.add(target, HERMES_ADDS)
        return store.remove(target, KEEP[target])
    finally:
        if saved is None:
            os.environ.pop("HERMES_HOME", None)
        else:
            os.environ["HERMES_HOME"] = saved


def hermes_approve(home: HermesHome) -> dict[str, Any] | None:
    """Hermes' ``/memory approve <id>``: ``get_pending``, ``apply_memory_pending``, discard on
    success (``hermes_cli/write_approval_commands.py``); None when Hermes finds no record."""
    from tools import write_approval as wa
    from tools.memory_tool import MemoryStore as HermesStore
    from tools.memory_tool import apply_memory_pending

    saved = os.environ.get("HERMES_HOME")
    os.environ["HERMES_HOME"] = str(home.path)
    try:
        rec = wa.get_pending(wa.MEMORY, PID)
        if rec is None:
            return None
        store = HermesStore()
        store.load_from_disk()
        res = apply_memory_pending(rec["payload"], store)
        if res.get("success"):
            wa.discard_pending(wa.MEMORY, PID)
        return res
    finally:
        if saved is None:
            os.environ.pop("HERMES_HOME", None)
        else:
            os.environ["HERMES_HOME"] = saved


# ----------------------------------------------------------------------------- state


def entries(home: HermesHome) -> dict[str, frozenset[str]]:
    out = {}
    for t in TARGETS:
        p = home.memory_file(t)
        out[t] = frozenset(parse_entries(p.read_text(encoding="utf-8") if p.exists() else ""))
    return out


@dataclass(frozen=True)
class Row:
    journal_id: int
    op: str
    kind: str
    target: str | None
    before: str | None
    after: str | None
    detail: dict[str, Any]
    state: str
    undone_by: int | None


def rows(home: HermesHome) -> list[Row]:
    """Every journal row, intents included (the columns of core/deck/db.py)."""
    with deckdb.opened(home) as conn:
        out = []
        for r in conn.execute("SELECT journal_id, op, kind, target, before, after, detail, state, undone_by "
                              "FROM journal ORDER BY journal_id"):
            detail = json.loads(r[6] or "{}")
            out.append(Row(r[0], r[1], r[2], r[3], r[4], r[5], detail if isinstance(detail, dict) else {}, r[7], r[8]))
        return out


def effect(row: Row) -> tuple[frozenset[str], frozenset[str]]:
    """(entries the row removed, entries it added), as sets of texts."""
    b, a = set(parse_entries(row.before)), set(parse_entries(row.after))
    return frozenset(b - a), frozenset(a - b)


def status(row: Row, now: frozenset[str]) -> str:
    """``present`` (its effect is in ``now``), ``absent`` (the before-state is), ``mixed``, or
    ``form`` (no entry changed)."""
    removed, added = effect(row)
    if not (removed or added):
        return "form"
    if added <= now and not (removed & now):
        return "present"
    if removed <= now and not (added & now):
        return "absent"
    return "mixed"


def hermes_effect(state: dict[str, frozenset[str]], targets: tuple[str, ...], how: str) -> dict[str, frozenset[str]]:
    out = dict(state)
    for t in targets:
        out[t] = out[t] | {HERMES_ADDS} if how == "add" else out[t] - {KEEP[t]}
    return out


def record_visible(home: HermesHome) -> bool:
    return (home.pending_dir / f"{PID}.json").exists()


@dataclass
class Outcome:
    """One kill point of one scenario: what broke (empty when nothing did)."""

    step: int
    what: str
    how: str
    problems: list[str] = field(default_factory=list)
    applied: bool | None = None  # whether the killed operation had happened (decided on the witness)


def _fresh(root: Path, name: str) -> HermesHome:
    home = root / name / "hermes_home"
    (home / "memories").mkdir(parents=True, exist_ok=True)
    return HermesHome(home)


def _kill(sc: Scenario, home: HermesHome, step: int, out: Outcome, setup: bool = True) -> dict[int, Row]:
    """Set up ``home`` (unless done), kill the operation before ``step``; returns the rows the
    killed operation wrote (intent or done), by id."""
    if setup:
        sc.setup(home)
    first = max((r.journal_id for r in rows(home)), default=0)
    status, _, log = run_in_child(lambda: sc.op(home), step)
    if status != CRASH_STATUS:
        out.problems.append(f"the child did not reach step {step} (status {status}, {log[-1:]})")
    return {r.journal_id: r for r in rows(home) if r.journal_id > first}


def _check_rows(home: HermesHome, op_ids: dict[int, Row], out: Outcome, settled_last: bool = True) -> list[Row]:
    """(c): nothing left intent/unknown; the operation's rows done exactly when their effect is
    there (a row deleted as "never happened" while its effect is in the file is a loss of
    history; checked when the settling was the last change, ``settled_last``). Returns the
    operation's rows still in the journal (none: it never happened)."""
    all_rows = rows(home)
    left = [f"#{r.journal_id} {r.op} {r.state}: {(r.detail.get('recovery') or {}).get('reason')}"
            for r in all_rows if r.kind == "memory" and r.state in ("intent", "unknown")]
    if left:
        out.problems.append(f"rows left unsettled: {left}")
    ops = [r for r in all_rows if r.journal_id in op_ids]
    now = entries(home)
    for r in (r for r in ops if r.undone_by is None):
        if r.state == "done" and status(r, now[str(r.target)]) not in ("present", "form"):
            out.problems.append(f"#{r.journal_id} {r.op} is done but its effect is not in {r.target}")
    kept = {r.journal_id for r in ops}
    for jid, r in op_ids.items():
        if settled_last and jid not in kept and status(r, now[str(r.target)]) == "present":
            out.problems.append(f"#{jid} {r.op} was deleted as never applied, but its effect is in {r.target}")
    out.applied = bool(ops) and all(r.state == "done" for r in ops)
    return ops


def _check_move(sc: Scenario, home: HermesHome, out: Outcome) -> None:
    if sc.name == "move":
        n = sum("beta fact" in es for es in entries(home).values())
        if n != 1:
            out.problems.append(f"the moved entry is in {n} files")


# ----------------------------------------------------------------------------- the two runs


def run_a(sc: Scenario, root: Path, step: int, what: str, how: str, old: dict, new: dict) -> Outcome:
    out = Outcome(step, what, how)
    home = _fresh(root, f"A-{sc.name}-{how}-{step}")
    op_ids = _kill(sc, home, step, out)
    hidden_after_kill = sc.approval and not record_visible(home)
    for t in sc.targets:
        res = hermes_write(home, t, how)
        if not res.get("success"):
            out.problems.append(f"Hermes' write on {t} failed: {res}")
    # the next memdeck command: an unrelated write on the same file, which settles the kill
    _ms(home).add(sc.targets[-1], LATER)
    _check_rows(home, op_ids, out)
    _check_move(sc, home, out)
    if sc.approval and hidden_after_kill and not out.applied and not record_visible(home):
        out.problems.append("the record was set aside, the write did not happen, and it was not staged again")
    # the retry (the repro's second approve), then Hermes' own approve of the same record
    try:
        sc.op(home)
    except Refused:
        pass
    hermes_res = hermes_approve(home) if sc.approval else None
    final = entries(home)
    with_later = lambda st: {t: es | {LATER} if t == sc.targets[-1] else es for t, es in st.items()}  # noqa: E731
    once, never = with_later(hermes_effect(new, sc.targets, how)), with_later(hermes_effect(old, sc.targets, how))
    if sc.approval:
        done = [r for r in rows(home) if r.detail.get("pending_id") == PID and r.state == "done" and r.undone_by is None]
        if len(done) > 1:
            out.problems.append(f"the pending record was applied {len(done)} times by memdeck")
        if done and hermes_res is not None:
            out.problems.append(f"Hermes could replay a record memdeck applied: {hermes_res}")
        if done and record_visible(home):
            out.problems.append("the record is still staged after memdeck applied it")
        if final == once:
            pass
        elif final == never and not done and (record_visible(home) or hermes_res is not None):
            pass  # never applied (killed first, and the replay is refused on Hermes' new entry)
        else:
            out.problems.append(f"entries {_show(final)} are neither the record applied once {_show(once)} "
                                f"nor not applied {_show(never)}")
        if any(p.name.startswith(PID) and p.name != f"{PID}.json" for p in home.pending_dir.iterdir()):
            out.problems.append("a copy of the record is left behind under another name")
    elif final != once:
        out.problems.append(f"entries {_show(final)} != the operation once plus Hermes' write {_show(once)}")
    _check_move(sc, home, out)
    return out


def run_b(sc: Scenario, root: Path, step: int, what: str, how: str) -> Outcome:
    out = Outcome(step, what, how)
    home = _fresh(root, f"B-{sc.name}-{how}-{step}")
    sc.setup(home)
    history.observe(home)  # the dashboard's first look
    op_ids = _kill(sc, home, step, out, setup=False)
    history.observe(home)  # the dashboard saw the file as the kill left it
    for t in sc.targets:
        hermes_write(home, t, how)
    history.observe(home)
    before_undo = entries(home)
    try:
        undo.undo(home, CFG)  # the next memdeck command
        refused = None
    except Refused as exc:
        refused = exc
    ops = _check_rows(home, op_ids, out, settled_last=False)  # the undo changed files after settling
    after = entries(home)
    hermes_kept = all((HERMES_ADDS in after[t]) if how == "add" else (KEEP[t] not in after[t]) for t in sc.targets)
    if not hermes_kept:
        out.problems.append(f"the undo took Hermes' write out: {_show(after)}")
    if out.applied:
        if refused is not None:
            out.problems.append(f"undo of the recovered operation refused: {refused.code}: {refused}")
            return out
        if any(r.undone_by is None for r in rows(home) if r.journal_id in op_ids):
            out.problems.append("the undo did not undo the recovered operation (the latest change)")
        for r in ops:
            if status(r, after[str(r.target)]) not in ("absent", "form"):
                out.problems.append(f"after the undo, {r.target} still holds the effect of #{r.journal_id}: {_show(after)}")
        _check_history(home, ops, out)
    elif refused is None and before_undo == after:
        out.problems.append("the undo changed nothing")
    elif refused is not None and refused.code not in ("nothing", "conflict"):
        out.problems.append(f"undo refused: {refused.code}: {refused}")
    return out


def _check_history(home: HermesHome, ops: list[Row], out: Outcome) -> None:
    history.observe(home)
    changes = history.list_changes(home, limit=200)
    ids = {r.journal_id for r in ops}
    for r in ops:
        removed, added = effect(r)
        for text in sorted(added):
            c = next((c for c in changes if c.target == r.target and c.after == text
                      and c.op in ("added", "replaced")), None)
            if c is None or c.attribution.get("journal_id") not in ids or c.actor != "cli" or c.attribution.get("op") != r.op:
                out.problems.append(f"History attributes {text!r} added to {r.target} to "
                                    f"{None if c is None else (c.actor, c.attribution)}, not to memdeck's #{r.journal_id}")
        for text in sorted(removed):
            c = next((c for c in changes if c.target == r.target and c.before == text
                      and c.op in ("removed", "replaced")), None)
            if c is None or c.attribution.get("journal_id") not in ids or c.actor != "cli":
                out.problems.append(f"History attributes {text!r} removed from {r.target} to "
                                    f"{None if c is None else (c.actor, c.attribution)}, not to memdeck's #{r.journal_id}")
    for c in changes:
        if c.after == HERMES_ADDS and c.op == "added" and c.by_memdeck:
            out.problems.append(f"History gives Hermes' entry to memdeck: {c.to_dict()}")


def _show(state: dict[str, frozenset[str]]) -> str:
    return json.dumps({t: sorted(es) for t, es in state.items()}, ensure_ascii=False)


# ----------------------------------------------------------------------------- the matrix


@functools.cache
def _cases(name: str, root: str) -> tuple[int, tuple[Outcome, ...]]:
    sc = next(s for s in SCENARIOS if s.name == name)
    base = Path(root)
    h_old = _fresh(base, f"{name}-old")
    sc.setup(h_old)
    old = entries(h_old)
    h_new = _fresh(base, f"{name}-new")
    sc.setup(h_new)
    steps, log = crash_points(lambda: sc.op(h_new))
    new = entries(h_new)
    assert new != old, f"{name}: the operation changed nothing"
    outs: list[Outcome] = []
    for how in HERMES_WRITES:
        for n in range(1, steps + 1):
            outs.append(run_a(sc, base, n, log[n - 1], how, old, new))
            outs.append(run_b(sc, base, n, log[n - 1], how))
    return steps, tuple(outs)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("interleave"))


@pytest.mark.parametrize("name", [s.name for s in SCENARIOS])
def test_killed_then_hermes_writes_then_the_next_command(name: str, root: str) -> None:
    steps, outs = _cases(name, root)
    assert steps >= 5 and len(outs) == steps * len(HERMES_WRITES) * 2
    bad = [f"step {o.step} ({o.what}), Hermes {o.how}: {p}" for o in outs for p in o.problems]
    assert not bad, f"{len(bad)} problems in {len(outs)} runs:\n" + "\n".join(bad[:40])
    # both sides of the file write were reached: kills before it (not applied) and after it
    assert {o.applied for o in outs} == {True, False}
