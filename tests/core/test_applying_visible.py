"""A bulk approval killed after a record was renamed to ``.applying`` never hides that write
(issue 40 item 2).

``approve --all-clean`` over three clean records is killed before each of its durable steps
(tests/crashpoints.py, as tests/core/test_crash_matrix.py does). After every kill, with no
memdeck write in between, each staged write is either in MEMORY.md or listed by every reader
of the queue (``pending list``'s queue, ``status``, ``approve --all-clean``'s own queue, the
Review panel's snapshot); and the next ``approve --all-clean`` applies each exactly once.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memdeck.core.config import Config
from memdeck.core.home import HermesHome
from memdeck.core.memory.approval import APPLYING_SUFFIX
from memdeck.core.memory.entries import parse_entries
from memdeck.core.memory.pending import list_pending
from memdeck.core.memory.review import approve_all_clean, review_queue
from memdeck.core.memory.store import MemoryStore
from memdeck.core.overview.reader import HomeReader
from memdeck.core.overview.status import build_status
from tests.crashpoints import CRASH_STATUS, crash_points, deterministic, run_in_child

CFG = Config()
STAGED = {"abcd0001": "staged fact one", "abcd0002": "staged fact two", "abcd0003": "staged fact three"}


def _setup(root: Path, name: str) -> HermesHome:
    home = HermesHome(root / name / "hermes_home")
    (home.path / "memories").mkdir(parents=True)
    with deterministic():
        MemoryStore(home, CFG).add("memory", "alpha fact")
    d = home.pending_dir
    d.mkdir(parents=True, exist_ok=True)
    for n, (pid, text) in enumerate(STAGED.items()):
        rec = {"id": pid, "subsystem": "memory", "action": "add", "summary": "s", "origin": "background_review",
               "created_at": 1.0 + n, "payload": {"action": "add", "target": "memory", "content": text}}
        (d / f"{pid}.json").write_text(json.dumps(rec))
    return home


def _entries(home: HermesHome) -> list[str]:
    p = home.path / "memories" / "MEMORY.md"
    return parse_entries(p.read_text(encoding="utf-8")) if p.exists() else []


def _bulk(home: HermesHome) -> Any:
    with deterministic():
        return approve_all_clean(home, CFG)


def _points(root: Path) -> tuple[int, list[str]]:
    home = _setup(root, "dry")
    return crash_points(lambda: _bulk(home))


def test_a_killed_bulk_approval_never_hides_a_staged_write(tmp_path: Path) -> None:
    steps, log = _points(tmp_path)
    aside_points = 0
    for step in range(1, steps + 1):
        home = _setup(tmp_path, f"kill-{step}")
        status, _, child_log = run_in_child(lambda h=home: _bulk(h), step)  # type: ignore[misc]
        assert status == CRASH_STATUS, (step, child_log[-1:])
        aside_points += any(n.endswith(APPLYING_SUFFIX) for n in (p.name for p in home.pending_dir.iterdir()))
        applied = {pid for pid, text in STAGED.items() if text in _entries(home)}
        # every reader of the queue, each on its own (the first one may settle what it finds)
        for reader, ids in (
            ("list_pending", lambda h: {r.id for r in list_pending(h)}),
            ("review_queue", lambda h: {i.id for i in review_queue(h, CFG)}),
            ("status", lambda h: {p["id"] for p in build_status(h, CFG)["pending"]}),
            ("snapshot", lambda h: {r.id for r in HomeReader(h, CFG).read(want=("pending",), context_report=False).pending}),
        ):
            shown = ids(home)
            hidden = set(STAGED) - applied - shown
            assert not hidden, f"step {step} ({log[step - 1]}): {reader} hides {sorted(hidden)}"
        # and the next bulk approval applies each staged write exactly once
        _bulk(home)
        entries = _entries(home)
        assert sorted(e for e in entries if e.startswith("staged")) == sorted(STAGED.values()), (step, entries)
        assert [p.name for p in home.pending_dir.iterdir()] == [], step
    assert aside_points > 0, "no kill point left a record set aside: the test does not reach the window"


def test_a_record_set_aside_while_the_lock_is_held_is_shown_and_never_approved(tmp_path: Path) -> None:
    """An approval in progress (its lock held) keeps its record aside: a listing shows it as
    ``applying`` (not hidden, not approvable); once the lock is free the next listing settles it."""
    from memdeck.core.fsio import file_lock

    home = _setup(tmp_path, "held")
    d = home.pending_dir
    (d / "abcd0002.json").rename(d / f"abcd0002.json{APPLYING_SUFFIX}")
    with file_lock(home.path / "memories" / "MEMORY.md"):
        recs = {r.id: r for r in list_pending(home)}
        assert set(recs) == set(STAGED) and recs["abcd0002"].applying
        queue = {i.id: i for i in review_queue(home, CFG)}
        assert queue["abcd0002"].state == "applying" and "being applied" in str(queue["abcd0002"].reason)
    # the lock is free: the listing puts it back (no journal row owns it: never applied)
    assert not any(r.applying for r in list_pending(home))
    assert (d / "abcd0002.json").exists() and not (d / f"abcd0002.json{APPLYING_SUFFIX}").exists()
    summary = approve_all_clean(home, CFG)
    assert summary.count("applied") == 3
