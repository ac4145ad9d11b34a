"""alerts_between: the transitions a person watching is told about, and nothing else."""

from __future__ import annotations

import dataclasses
import json

from memdeck.core.config import load_config
from memdeck.core.home import HermesHome
from memdeck.core.overview.alerts import CAPACITY_ALERT_PCT, alerts_between
from memdeck.core.overview.snapshot import build_snapshot, open_statedb, take_stamps
from memdeck.core.demo import DEMO_NOW, build_demo_home


def _snap(home: HermesHome, db, prev=None):
    return build_snapshot(home, load_config(home), db, previous=prev, now=DEMO_NOW, stamps=take_stamps(home, db))


def test_new_pending_write_and_crossing_90_percent_raise_one_alert_each(tmp_path) -> None:
    home = build_demo_home(tmp_path / "demo", seed=7, now=DEMO_NOW)
    db = open_statedb(home)
    first = _snap(home, db)
    assert alerts_between(None, first) == []
    assert alerts_between(first, first) == []  # nothing changed: nothing to say
    rec = {"id": "cafe0001", "subsystem": "memory", "action": "add", "origin": "background_review", "summary": "s",
           "created_at": DEMO_NOW, "payload": {"action": "add", "target": "user", "content": "Prefers dark mode"}}
    (home.pending_dir / "cafe0001.json").write_text(json.dumps(rec), encoding="utf-8")
    # a file below 90 % of its char limit grows past it
    target = next(t for t in ("memory", "user") if first.memory[t].chars * 100 // first.memory[t].limit < CAPACITY_ALERT_PCT)
    user = home.memory_file(target)
    text = user.read_text(encoding="utf-8")
    state = first.memory[target]
    need = state.limit * CAPACITY_ALERT_PCT // 100 - state.chars + 5
    assert need > 0
    user.write_text(text + "\n§\n" + "x" * need, encoding="utf-8")
    second = _snap(home, db, first)
    kinds = sorted(a.kind for a in alerts_between(first, second))
    assert kinds == ["capacity", "pending"]
    pending = next(a for a in alerts_between(first, second) if a.kind == "pending")
    assert pending.data["id"] == "cafe0001" and "background_review" in pending.message
    assert alerts_between(second, _snap(home, db, second)) == []  # still over 90 %: said once
    db.close()


def test_integrity_falling_below_the_floor_is_an_error_once(tmp_path) -> None:
    home = build_demo_home(tmp_path / "demo", seed=7, now=DEMO_NOW)
    db = open_statedb(home)
    snap = _snap(home, db)
    floor = snap.config.memlock.alert_floor
    high = dataclasses.replace(snap, audit=dataclasses.replace(snap.audit, score=floor))
    low = dataclasses.replace(snap, audit=dataclasses.replace(snap.audit, score=floor - 1))
    (alert,) = alerts_between(high, low)
    assert alert.kind == "integrity" and alert.severity == "error" and alert.data["score"] == floor - 1
    assert alerts_between(low, low) == []
    other = dataclasses.replace(low, session_id="another-session")
    assert alerts_between(high, other) == []  # showing another session is not an event
    db.close()
