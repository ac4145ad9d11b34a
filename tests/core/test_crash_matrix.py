"""Issue 13: every write path of the core, killed at every step (tests/crashpoints.py).

For each operation a dry run counts its durable steps (each ``os.replace``/``rename``/``unlink``/
``link``/``fsync`` and each memdeck.db commit); then, for every step N, a fresh tiny home gets the
same setup and the operation is killed (``os._exit``) before step N. After each kill:

* every data file (MEMORY.md, USER.md, MemLock session files, persist/ pins and manifest,
  pending records) holds exactly its old or its new bytes, complete;
* the journal never records a change that is not on disk (recorded => every file is new);
* nothing is lost: an entry or anchor text present both before and after the operation is in a
  file or the archive (intent rows included), before and after the next run's intent recovery;
* a retry (the same operation again, or the same undo again when its rows are still undoable)
  ends in the state of an uninterrupted run: same entries in each file, same archive rows (no
  duplicate), same anchors and global pins.

Journal/file disagreements that a retry cannot repair (a change on disk that the journal never
recorded) are collected separately: ``test_journal_agrees_with_files_at_every_point``.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memdeck.core import history, undo
from memdeck.core.anchors.store import AnchorStore
from memdeck.core.config import Config
from memdeck.core.deck import db as deckdb
from memdeck.core.deck import journal
from memdeck.core.errors import Refused
from memdeck.core.home import HermesHome
from memdeck.core.memory import pending
from memdeck.core.memory.approval import APPLYING_SUFFIX
from memdeck.core.memory.entries import parse_entries, serialize_entries
from memdeck.core.memory.store import MemoryStore, recover_intents
from tests.crashpoints import CRASH_STATUS, crash_points, deterministic, run_in_child

SID = "s1"
CFG = Config()

# --------------------------------------------------------------------------- state of a home


def _data_files(home: HermesHome) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for p in sorted(Path(home.path).rglob("*")):
        rel = p.relative_to(home.path).as_posix()
        name = p.name
        if (not p.is_file() or rel.startswith("memdeck/") or name.startswith(".") or name.endswith((".lock", ".tmp"))
                or ".bak." in name or rel in ("state.db-wal", "state.db-shm", "state.db-journal")
                or name.endswith(APPLYING_SUFFIX)):  # a record set aside: _aside_records
            continue
        if name.startswith("config.yaml.bak-"):  # plugin install's backup, named by the wall clock
            rel = "config.yaml.bak-*"
        out[rel] = p.read_bytes()
    return out


def _aside_records(home: HermesHome) -> dict[str, bytes]:
    """Pending records an approval set aside (``core/memory/approval.py``), by their record's name."""
    d = home.pending_dir
    return {f"pending/memory/{p.name[:-len(APPLYING_SUFFIX)]}": p.read_bytes()
            for p in (sorted(d.glob(f"*.json{APPLYING_SUFFIX}")) if d.is_dir() else [])}


def _rows(home: HermesHome, q: str) -> list[tuple[Any, ...]]:
    if not deckdb.db_path(home).exists():
        return []
    c = sqlite3.connect(deckdb.db_path(home))
    try:
        return [tuple(r) for r in c.execute(q)]
    finally:
        c.close()


@dataclass(frozen=True)
class State:
    files: dict[str, bytes]
    archive: tuple[tuple[Any, ...], ...]   # (kind, target, anchor_id, scope, session_id, text, state), sorted
    journal: tuple[tuple[Any, ...], ...]   # (op, kind, target, scope, session_id, undone?) of the done rows
    memory: dict[str, list[str]]
    anchors: dict[str, list[tuple[str, bool]]]  # session or "persist" -> sorted (text, pinned)

    def texts(self) -> set[str]:
        """Every entry/anchor text held somewhere (files, archive rows that still hold it)."""
        out = {t for es in self.memory.values() for t in es}
        out |= {t for v in self.anchors.values() for t, _ in v}
        out |= {a[2] for a in self.archive if a[3] in ("archived", "archiving", "restoring")}
        return out

    def logical(self) -> tuple[Any, ...]:
        return (self.memory, self.archive, self.anchors)


def _anchor_texts(files: dict[str, bytes]) -> dict[str, list[tuple[str, bool]]]:
    out: dict[str, list[tuple[str, bool]]] = {}
    for rel, b in files.items():
        if not rel.startswith("memlock/") or not rel.endswith(".json") or rel.endswith("manifest.json"):
            continue
        d = json.loads(b)
        key = "persist" if rel.startswith("memlock/persist/") else rel
        if key == "persist":
            out.setdefault(key, []).append((d["text"], bool(d.get("pinned", True))))
        else:
            out[key] = [(a["text"], bool(a.get("pinned"))) for a in (d.get("anchors") or {}).values()]
    return {k: sorted(v) for k, v in out.items()}


def snapshot(home: HermesHome) -> State:
    files = _data_files(home)
    mem = {t: parse_entries(files.get(f"memories/{n}", b"").decode()) for t, n in (("memory", "MEMORY.md"), ("user", "USER.md"))}
    arch = tuple(sorted(_rows(home, "SELECT kind, COALESCE(target, ''), COALESCE(anchor_id, ''), COALESCE(scope, ''),"
                                " COALESCE(session_id, ''), text, state FROM archive")))
    jr = tuple((op, k, t, sc, sid, u is not None) for op, k, t, sc, sid, u in
               _rows(home, "SELECT op, kind, target, scope, session_id, undone_by FROM journal WHERE state = 'done' ORDER BY journal_id"))
    return State(files, arch, jr, mem, _anchor_texts(files))


# --------------------------------------------------------------------------- scenarios


def _ms(home: HermesHome) -> MemoryStore:
    return MemoryStore(home, CFG)


def _as(home: HermesHome) -> AnchorStore:
    return AnchorStore(home, CFG)


def _base(home: HermesHome) -> None:
    s = _ms(home)
    s.add("memory", "alpha fact")
    s.add("memory", "beta fact")
    s.add("user", "gamma fact")


def _anchor_id(home: HermesHome, text: str) -> str:
    return next(a.id for a in _as(home).load_session(SID).anchors.values() if a.text == text)


def _stage(home: HermesHome, pid: str, payload: dict[str, Any]) -> None:
    d = home.pending_dir
    d.mkdir(parents=True, exist_ok=True)
    rec = {"id": pid, "subsystem": "memory", "action": payload.get("action"), "summary": "s",
           "origin": "background_review", "created_at": 1.0, "payload": payload}
    (d / f"{pid}.json").write_text(json.dumps(rec))


def _anchors_base(home: HermesHome) -> None:
    _base(home)
    a = _as(home)
    a.pin("Always answer in English.", session_id=SID)
    a.pin("Never delete backups.", session_id=SID, scope="global")


def _pinned(home: HermesHome, text: str, scope: str = "session") -> None:
    if not any(t == text for v in snapshot(home).anchors.values() for t, _ in v):
        _as(home).pin(text, session_id=SID, scope=scope)


def _archived_memory(home: HermesHome) -> None:
    _base(home)
    _ms(home).archive("memory", "beta fact")


def _archived_anchor(home: HermesHome) -> None:
    _anchors_base(home)
    _as(home).archive(_anchor_id(home, "Always answer in English."), SID)


def _history_change(home: HermesHome) -> None:
    _base(home)
    history.observe(home)
    p = home.memory_file("memory")  # an outside writer removes an entry
    p.write_text(serialize_entries(["alpha fact"]))
    history.observe(home)


def _change_id(home: HermesHome) -> int:
    return next(c.change_id for c in history.list_changes(home) if c.target == "memory")


def _outside_anchor_write(home: HermesHome, change: Callable[[dict[str, Any]], None]) -> None:
    """MemLock itself (an outside writer) rewrites the session file; memdeck observes it."""
    p = Path(home.path) / "memlock" / f"{SID}.json"
    data = json.loads(p.read_text())
    change(data["anchors"])
    p.write_text(json.dumps(data, indent=2, ensure_ascii=False))
    history.observe(home)


def _history_anchor_removed(home: HermesHome) -> None:
    _anchors_base(home)
    history.observe(home)
    aid = _anchor_id(home, "Always answer in English.")
    _outside_anchor_write(home, lambda anchors: anchors.pop(aid))


def _history_anchor_changed(home: HermesHome) -> None:
    _anchors_base(home)
    history.observe(home)
    aid = _anchor_id(home, "Always answer in English.")
    _outside_anchor_write(home, lambda anchors: anchors[aid].update(text="Always answer in Spanish."))


def _anchor_change_id(home: HermesHome) -> int:
    return next(c.change_id for c in history.list_changes(home) if c.session_id == SID and c.actor == "external")


def _archive_rows(home: HermesHome, kind: str) -> list[Any]:
    return _rows(home, f"SELECT archive_id FROM archive WHERE kind = '{kind}' AND state = 'archived'")


def _archive_row(home: HermesHome, kind: str) -> int:
    return int(_rows(home, f"SELECT archive_id FROM archive WHERE kind = '{kind}' AND state = 'archived'")[0][0])


@dataclass(frozen=True)
class Scenario:
    name: str
    setup: Callable[[HermesHome], None]
    op: Callable[[HermesHome], Any]
    retry: Callable[[HermesHome], Any] | None = None  # default: the op again


def _tolerant(fn: Callable[[HermesHome], Any]) -> Callable[[HermesHome], Any]:
    def run(home: HermesHome) -> Any:
        try:
            return fn(home)
        except Refused as exc:
            return exc
    return run


def _undo_scenario(name: str, setup: Callable[[HermesHome], None]) -> Scenario:
    """Undo of the last journaled change ``setup`` made; the retry undoes again only while
    those same rows are still undoable (never the change before them)."""
    def prepare(home: HermesHome) -> None:
        setup(home)
        rows = journal.last_undoable(home)
        (Path(home.path) / "undo_target.json").write_text(json.dumps([r.journal_id for r in rows]))

    def op(home: HermesHome) -> Any:
        return undo.undo(home, CFG)

    def retry(home: HermesHome) -> Any:
        want = json.loads((Path(home.path) / "undo_target.json").read_text())
        if [r.journal_id for r in journal.last_undoable(home)] == want:
            return undo.undo(home, CFG)
        return None

    return Scenario(f"undo-{name}", prepare, op, retry)


def _then(*steps: Callable[[HermesHome], Any]) -> Callable[[HermesHome], None]:
    def run(home: HermesHome) -> None:
        for s in steps:
            s(home)
    return run


_add = lambda h: _ms(h).add("memory", "delta fact")  # noqa: E731
_replace = lambda h: _ms(h).replace("memory", "beta fact", "beta fact v2")  # noqa: E731
_remove = lambda h: _ms(h).remove("memory", "beta fact")  # noqa: E731
_edit = lambda h: _ms(h).edit("beta fact", "beta fact edited")  # noqa: E731
_move = lambda h: _ms(h).move("memory", "beta fact", "user")  # noqa: E731
_archive = lambda h: _ms(h).archive("memory", "beta fact")  # noqa: E731
_restore = lambda h: _ms(h).restore(_archive_row(h, "memory"))  # noqa: E731
_restore_retry = lambda h: _archive_rows(h, "memory") and _restore(h)  # noqa: E731
_approve = lambda h: pending.approve(h, CFG, "abcd0001")  # noqa: E731
_revert = lambda h: history.revert(h, CFG, _change_id(h))  # noqa: E731
_revert_anchor = lambda h: history.revert(h, CFG, _anchor_change_id(h))  # noqa: E731


def _drifted(home: HermesHome) -> None:
    _base(home)
    home.memory_file("memory").write_text("alpha fact\n\n§\nbeta fact\n")


_normalize = lambda h: _ms(h).normalize("memory")  # noqa: E731


def _staged(home: HermesHome) -> None:
    _base(home)
    _stage(home, "abcd0001", {"action": "add", "target": "memory", "content": "staged fact"})


def _staged_batch(home: HermesHome) -> None:
    _base(home)
    _stage(home, "abcd0001", {"action": "batch", "target": "memory", "operations": [
        {"action": "add", "content": "batched fact"}, {"action": "remove", "old_text": "alpha"}]})


_pin = lambda h: _pinned(h, "Cite the source.")  # noqa: E731
_pin_global = lambda h: _pinned(h, "Cite the source globally.", "global")  # noqa: E731
_unpin = lambda h: _as(h).unpin(_anchor_id(h, "Always answer in English."), session_id=SID)  # noqa: E731
_unpin_global = lambda h: _as(h).unpin(_anchor_id(h, "Never delete backups."), session_id=SID, scope="global")  # noqa: E731
_anchor_edit = lambda h: _as(h).update(_anchor_id(h, "Always answer in English."), session_id=SID,  # noqa: E731
                                       text="Always answer in French.")
_anchor_archive = lambda h: _as(h).archive(_anchor_id(h, "Always answer in English."), SID)  # noqa: E731
_anchor_restore = lambda h: _as(h).restore(_archive_row(h, "anchor"))  # noqa: E731


def _anchor_edit_retry(home: HermesHome) -> Any:
    texts = [t for t, _ in snapshot(home).anchors.get(f"memlock/{SID}.json", [])]
    return None if "Always answer in French." in texts else _anchor_edit(home)


def _anchor_once(fn: Callable[[HermesHome], Any], gone: str) -> Callable[[HermesHome], Any]:
    """Retry an anchor removal only while the anchor is still in the session."""
    def run(home: HermesHome) -> Any:
        texts = [t for t, _ in snapshot(home).anchors.get(f"memlock/{SID}.json", [])]
        return fn(home) if gone in texts else None
    return run


SCENARIOS: list[Scenario] = [
    Scenario("add", _base, _add),
    Scenario("replace", _base, _replace),
    Scenario("remove", _base, _remove),
    Scenario("edit", _base, _edit),
    Scenario("move", _base, _move),
    Scenario("archive", _base, _archive),
    Scenario("restore", _archived_memory, _restore, _restore_retry),
    Scenario("normalize", _drifted, _normalize),
    Scenario("approve", _staged, _approve),
    Scenario("approve-batch", _staged_batch, _approve),
    Scenario("reject", _staged, lambda h: pending.reject(h, "abcd0001")),
    Scenario("history-revert", _history_change, _revert),
    # the anchor revert of a change-history entry (core/history/reverting.py ``_revert_anchor``)
    Scenario("history-revert-anchor-removed", _history_anchor_removed, _revert_anchor),
    Scenario("history-revert-anchor-changed", _history_anchor_changed, _revert_anchor),
    Scenario("anchor-pin", _anchors_base, _pin),
    Scenario("anchor-pin-global", _anchors_base, _pin_global),
    Scenario("anchor-unpin", _anchors_base, _unpin, _anchor_once(_unpin, "Always answer in English.")),
    Scenario("anchor-unpin-global", _anchors_base, _unpin_global,
             _anchor_once(_unpin_global, "Never delete backups.")),
    Scenario("anchor-edit", _anchors_base, _anchor_edit, _anchor_edit_retry),
    Scenario("anchor-archive", _anchors_base, _anchor_archive, _anchor_once(_anchor_archive, "Always answer in English.")),
    Scenario("anchor-restore", _archived_anchor, _anchor_restore,
             lambda h: _archive_rows(h, "anchor") and _anchor_restore(h)),
    # undo of every op the journal records (core/undo.py UNDO_HANDLERS: kinds memory, anchor)
    _undo_scenario("add", _then(_base, _add)),
    _undo_scenario("replace", _then(_base, _replace)),
    _undo_scenario("remove", _then(_base, _remove)),
    _undo_scenario("edit", _then(_base, _edit)),
    _undo_scenario("move", _then(_base, _move)),
    _undo_scenario("archive", _then(_base, _archive)),
    _undo_scenario("restore", _then(_archived_memory, _restore)),
    _undo_scenario("normalize", _then(_drifted, _normalize)),
    _undo_scenario("approve", _then(_staged, _approve)),
    _undo_scenario("approve-batch", _then(_staged_batch, _approve)),
    _undo_scenario("history-revert", _then(_history_change, _revert)),
    _undo_scenario("anchor-pin", _then(_anchors_base, _pin)),
    _undo_scenario("anchor-pin-global", _then(_anchors_base, _pin_global)),
    _undo_scenario("anchor-unpin", _then(_anchors_base, _unpin)),
    _undo_scenario("anchor-unpin-global", _then(_anchors_base, _unpin_global)),
    _undo_scenario("anchor-edit", _then(_anchors_base, _anchor_edit)),
    _undo_scenario("anchor-archive", _then(_anchors_base, _anchor_archive)),
    _undo_scenario("anchor-restore", _then(_archived_anchor, _anchor_restore)),
]


# --------------------------------------------------------------------------- the matrix


def _fresh(root: Path, name: str) -> HermesHome:
    home = root / name / "hermes_home"
    (home / "memories").mkdir(parents=True)
    return HermesHome(home)


@dataclass
class Point:
    step: int
    what: str
    hard: list[str]      # broken invariants (files, loss, retry)
    journal: list[str]   # the journal disagrees with the files and the retry does not repair it


def _check_point(sc: Scenario, root: Path, step: int, what: str, old: State, new: State) -> Point:
    home = _fresh(root, f"{sc.name}-{step}")
    with deterministic():
        sc.setup(home)
    before = snapshot(home)
    assert before.files == old.files, "the setup is not deterministic"

    def op() -> None:
        with deterministic():
            sc.op(home)

    status, _, log = run_in_child(op, step)
    hard: list[str] = []
    jr: list[str] = []
    if status != CRASH_STATUS:
        hard.append(f"the child did not reach step {step} (status {status}, {log[-1:]})")
    crashed = snapshot(home)
    for rel in sorted(set(old.files) | set(new.files) | set(crashed.files)):
        if crashed.files.get(rel) not in (old.files.get(rel), new.files.get(rel)):
            hard.append(f"{rel} is neither its old nor its new content")
    for rel, b in _aside_records(home).items():  # set aside: whole, and not also under its name
        if b != old.files.get(rel) or rel in crashed.files:
            hard.append(f"{rel} was set aside torn, or is also still staged")
    data = lambda st: {k: v for k, v in st.files.items() if not k.startswith("pending/")}  # noqa: E731
    if crashed.journal == new.journal and data(crashed) != data(new):
        hard.append("the journal records the change but the files do not hold it")
    keep = old.texts() & new.texts()
    lost = keep - crashed.texts()
    if lost:
        hard.append(f"lost after the kill: {sorted(lost)}")
    recover_intents(home, CFG)
    _as(home).recover_intents()
    lost = keep - snapshot(home).texts()
    if lost:
        hard.append(f"lost after intent recovery: {sorted(lost)}")
    try:
        with deterministic():
            _tolerant(sc.retry or sc.op)(home)
    except Exception as exc:  # noqa: BLE001 - a crash of the retry is a finding
        hard.append(f"the retry raised {exc!r}")
    final = snapshot(home)
    lost = keep - final.texts()
    if lost:
        hard.append(f"lost after the retry: {sorted(lost)}")
    if sorted(k for k in final.files if k.startswith("pending/")) != sorted(k for k in new.files if k.startswith("pending/")):
        jr.append("after the retry the pending records differ from an uninterrupted run's")
    if final.logical() != new.logical():
        hard.append(f"after the retry the state differs from an uninterrupted run: {final.logical()} != {new.logical()}")
    elif final.journal != new.journal:
        jr.append(f"journal {final.journal} != {new.journal}")
    return Point(step, what, hard, jr)


@functools.cache
def _matrix(name: str, root: str) -> tuple[int, tuple[Point, ...]]:
    sc = next(s for s in SCENARIOS if s.name == name)
    base = Path(root)
    h_old = _fresh(base, f"{name}-old")
    with deterministic():
        sc.setup(h_old)
    old = snapshot(h_old)
    h_new = _fresh(base, f"{name}-new")
    with deterministic():
        sc.setup(h_new)

    def op() -> None:
        with deterministic():
            sc.op(h_new)

    steps, log = crash_points(op)
    new = snapshot(h_new)
    assert new.files != old.files or new.archive != old.archive or new.journal != old.journal, "the op changed nothing"
    return steps, tuple(_check_point(sc, base, n, log[n - 1], old, new) for n in range(1, steps + 1))


@pytest.fixture(scope="module")
def matrix_root(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("crash_matrix"))


#: holes the matrix found in the anchor store, each fixed by the write-ahead anchor change
#: (core/anchors/files.py ``apply_change``); a new entry here is a strict xfail
ANCHOR_HOLES: dict[str, str] = {}


def _param(name: str) -> Any:
    if name in ANCHOR_HOLES:
        return pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=ANCHOR_HOLES[name]))
    return name


@pytest.mark.parametrize("name", [_param(s.name) for s in SCENARIOS])
def test_killed_at_every_step_loses_nothing_and_a_retry_completes(name: str, matrix_root: str) -> None:
    steps, points = _matrix(name, matrix_root)
    assert steps == len(points) >= 2
    bad = [f"step {p.step} ({p.what}): {h}" for p in points for h in p.hard]
    assert not bad, "\n".join(bad)


def test_journal_agrees_with_files_at_every_point(matrix_root: str) -> None:
    """After a kill and a retry, the journal holds what an uninterrupted run records (no change
    on disk that the journal lacks, no pending record lost)."""
    bad = []
    for sc in SCENARIOS:
        if sc.name in ANCHOR_HOLES:
            continue
        _, points = _matrix(sc.name, matrix_root)
        bad += [f"{sc.name} step {p.step} ({p.what}): {j}" for p in points for j in p.journal]
    assert not bad, "\n".join(bad)


# --------------------------------------------------------------------------- every writing command of the CLI
#
# The scenarios above are the core's write paths, chosen by hand. Below, every command of the real
# parser that is not marked read-only (tests/helpers/commands.py: a new command is a writer until
# it is marked read-only) runs as `memdeck ...` (``memdeck.core.cli.main``) on a copy of the
# hostile homes' base (the demo home plus journal, archive and history) and is killed at every
# durable step it takes, the change history's commits included. Its samples run in order; the
# earlier ones set the home up (uninterrupted), the last one is the one killed. After each kill:
# every data file holds its old or its new bytes; the journal never records a change the files
# lack; the same command run again (the next command resolves what the kill left) exits with a
# result or a reason, never a traceback; then nothing present before and after an uninterrupted
# run is lost, the state is that run's, and memdeck.db passes its integrity check.

#: a writer whose samples write nothing on the base home gets a setup here (home -> None)
CLI_SETUP: dict[str, Callable[[Path], None]] = {
    # normalize rewrites a drifted file: give USER.md whitespace drift (Hermes' parse, not its join)
    "memory normalize": lambda root: (root / "memories" / "USER.md").write_text(
        (root / "memories" / "USER.md").read_text(encoding="utf-8").replace("\n§\n", "\n\n§\n\n", 1), encoding="utf-8"),
}


#: a writer whose last sample acts on records the earlier samples used up gets them here, staged
#: after those samples and before the killed one (home -> None): a bulk approve needs a clean
#: record left, a bulk reject a stale one
CLI_BEFORE_LAST: dict[str, Callable[[Path], None]] = {
    "pending approve": lambda root: _stage(HermesHome(root), "c1ea2a11", {
        "action": "add", "target": "memory", "content": "Crash-matrix clean write: staged to be approved."}),
    "pending reject": lambda root: _stage(HermesHome(root), "57a1e0f1", {
        "action": "replace", "target": "memory", "content": "Crash-matrix stale write.",
        "old_text": "an entry that is not in MEMORY.md"}),
}


def _cli_op(home: Path, argv: list[str], ok: tuple[int, ...] = (0, 3)) -> Callable[[], None]:
    """``memdeck --home HOME ARGV`` in this process (deterministic clock and ids), raising when the
    exit code is not in ``ok`` or an exception escapes (the child reports it)."""
    import contextlib
    import io

    from memdeck.core.cli import main as cli_main

    def op() -> None:
        out, err = io.StringIO(), io.StringIO()
        with deterministic(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli_main(["--home", str(home), *argv])
        if code not in ok:
            raise RuntimeError(f"exit {code}: {err.getvalue()[-300:]} {out.getvalue()[-300:]}")
        if code != 0 and "memdeck: " not in err.getvalue() and '"success": false' not in out.getvalue():
            raise RuntimeError(f"exit {code} without a reason")
    return op


@functools.lru_cache(maxsize=1)
def _cli_base(root: str) -> Path:
    from tests.helpers.hostile import build_base

    return build_base(Path(root) / "cli-base")


def _cli_case(cmd: str, root: Path) -> tuple[Path, list[str]]:
    """A home set up for ``cmd`` (its setup, then every sample but the last, uninterrupted) and the
    last sample, filled from that home."""
    from tests.helpers.commands import SAMPLES, fill, home_values
    from tests.helpers.hostile import copy_home

    template = copy_home(_cli_base(str(root)), root / f"cli-{cmd.replace(' ', '_')}-template")
    if cmd in CLI_SETUP:
        CLI_SETUP[cmd](template)
    samples = SAMPLES[cmd]
    for argv in samples[:-1]:
        status, _, log = run_in_child(_cli_op(template, fill(argv, home_values(str(template)))), None)
        assert status == 0, f"{cmd}: the setup sample {argv} failed: {log[-1:]}"
    if cmd in CLI_BEFORE_LAST:
        CLI_BEFORE_LAST[cmd](template)
    return template, fill(samples[-1], home_values(str(template)))


def _diff(got: State, want: State) -> str:
    """What ``got`` holds that ``want`` does not and the reverse, per file/archive (short)."""
    out = []
    for t in ("memory", "user"):
        a, b = got.memory.get(t, []), want.memory.get(t, [])
        if a != b:
            out.append(f"{t}: extra {[x[:40] for x in a if x not in b]} missing {[x[:40] for x in b if x not in a]}"
                       + (" (order)" if sorted(a) == sorted(b) else ""))
    if got.archive != want.archive:
        out.append(f"archive: extra {set(got.archive) - set(want.archive)} missing {set(want.archive) - set(got.archive)}")
    for k in sorted(set(got.anchors) | set(want.anchors)):
        a, b = got.anchors.get(k, []), want.anchors.get(k, [])
        if a != b:
            out.append(f"{k}: extra {[(t[:30], p) for t, p in a if (t, p) not in b]} "
                       f"missing {[(t[:30], p) for t, p in b if (t, p) not in a]}")
    return "; ".join(out)


def _integrity(home: HermesHome) -> list[str]:
    rows = _rows(home, "PRAGMA integrity_check")
    return [] if rows == [("ok",)] or not rows else [f"memdeck.db integrity_check: {rows[:3]}"]


def _cli_point(cmd: str, template: Path, argv: list[str], root: Path, step: int, what: str,
               old: State, new: State, again: State) -> Point:
    """Kill ``memdeck ARGV`` before ``step``; check the disk, resolve what the kill left as the next
    write would (both stores' intent recovery), run the command again, and compare with an
    uninterrupted run (``new``) or, when the kill came after the change was made, with two
    uninterrupted runs (``again``: ``undo`` twice undoes two changes, ``pin`` twice pins twice)."""
    from tests.helpers.hostile import copy_home, remove_home

    path = copy_home(template, root / f"cli-{cmd.replace(' ', '_')}-{step}")
    home = HermesHome(path)
    hard: list[str] = []
    jr: list[str] = []
    status, _, log = run_in_child(_cli_op(path, argv), step)
    if status != CRASH_STATUS:
        hard.append(f"the child did not reach step {step} (status {status}, {log[-1:]})")
    crashed = snapshot(home)
    for rel in sorted(set(old.files) | set(new.files) | set(crashed.files)):
        if crashed.files.get(rel) not in (old.files.get(rel), new.files.get(rel)):
            hard.append(f"{rel} is neither its old nor its new content")
    data = lambda st: {k: v for k, v in st.files.items() if not k.startswith("pending/")}  # noqa: E731
    if new.journal != old.journal and crashed.journal == new.journal and data(crashed) != data(new):
        hard.append("the journal records the change but the files do not hold it")
    keep = old.texts() & new.texts()
    lost = keep - crashed.texts()
    if lost:
        hard.append(f"lost after the kill: {sorted(lost)[:3]}")
    with deterministic():
        recover_intents(home, CFG)
        _as(home).recover_intents()
    lost = keep - snapshot(home).texts()
    if lost:
        hard.append(f"lost after intent recovery: {sorted(lost)[:3]}")
    status, _, log = run_in_child(_cli_op(path, argv, ok=(0, 1, 3)), None)
    if status != 0:
        hard.append(f"the command run again failed: {log[-1:]}")
    final = snapshot(home)
    lost = keep - final.texts()
    if lost:
        hard.append(f"lost after the command ran again: {sorted(lost)[:3]}")
    if final.logical() not in (new.logical(), again.logical()):
        hard.append(f"after the command ran again the state is neither one run's nor two runs': {_diff(final, new)}")
    elif final.files not in (new.files, again.files):
        want = new if final.logical() == new.logical() else again
        changed = sorted(k for k in set(final.files) | set(want.files) if final.files.get(k) != want.files.get(k))
        jr.append(f"after the command ran again these files differ from an uninterrupted run's: {changed[:5]}")
    hard += _integrity(home)
    remove_home(path)
    return Point(step, what, hard, jr)


@functools.cache
def _cli_matrix(cmd: str, root: str) -> tuple[int, tuple[Point, ...]]:
    from tests.helpers.hostile import copy_home

    base = Path(root)
    template, argv = _cli_case(cmd, base)
    old = snapshot(HermesHome(template))
    h_new = copy_home(template, base / f"cli-{cmd.replace(' ', '_')}-new")
    steps, log = crash_points(_cli_op(h_new, argv))
    new = snapshot(HermesHome(h_new))
    assert new.files != old.files or new.archive != old.archive or new.journal != old.journal, (
        f"`memdeck {' '.join(argv)}` changed nothing on the crash matrix's home: give {cmd!r} a sample that "
        "writes, or a setup in CLI_SETUP / CLI_BEFORE_LAST")
    status, _, run_log = run_in_child(_cli_op(h_new, argv, ok=(0, 1, 3)), None)  # the same command once more
    assert status == 0, f"`memdeck {' '.join(argv)}` run a second time failed: {run_log[-1:]}"
    again = snapshot(HermesHome(h_new))
    return steps, tuple(_cli_point(cmd, template, argv, base, n, log[n - 1], old, new, again)
                        for n in range(1, steps + 1))


def _writers() -> list[str]:
    from tests.helpers.commands import writers

    return writers()


@pytest.mark.parametrize("cmd", _writers())
def test_every_writing_command_killed_at_every_step_loses_nothing(cmd: str, matrix_root: str) -> None:
    steps, points = _cli_matrix(cmd, matrix_root)
    assert steps == len(points) >= 2
    bad = [f"step {p.step} ({p.what}): {h}" for p in points for h in p.hard]
    assert not bad, "\n".join(bad)


def test_every_writing_command_leaves_the_files_of_an_uninterrupted_run(matrix_root: str) -> None:
    """After a kill and the same command again, every data file holds what an uninterrupted run
    writes (not only the same entries and anchors)."""
    bad = []
    for cmd in _writers():
        _, points = _cli_matrix(cmd, matrix_root)
        bad += [f"{cmd} step {p.step} ({p.what}): {j}" for p in points for j in p.journal]
    assert not bad, "\n".join(bad)
