"""The demo home generator: determinism, formats, the story it tells, and the big-home builder."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from memdeck.core import demo as demo_mod
from memdeck.core.anchors.audit import audited_region, keyword_audit
from memdeck.core.anchors.lifecycle import audit_session
from memdeck.core.anchors.rehydration import plan_reminder
from memdeck.core.anchors.store import AnchorStore
from memdeck.core.config import load_config
from memdeck.core.demo import DEMO_NOW, build_big_home, build_demo_home, demo_home_dir, demo_plan, fresh_demo_home
from memdeck.core.demo.story import (
    DEMO_MARKER,
    DEMO_MEMORY_LIMIT,
    DEMO_USER_LIMIT,
    FLAGGED_MEMORY_ENTRY,
    MEMORY_USAGE_BAND,
    USER_REPLACE_TARGET,
    USER_USAGE_BAND,
)
from memdeck.core.errors import MemdeckError
from memdeck.core.sessions.compaction import SUMMARY_PREFIX_0_19, match_summary
from memdeck.core.sessions.statedb import StateDB
from tests.helpers.demo import db_rows, demo_home, demo_home_template, file_bytes  # noqa: F401

DELIM = "\n§\n"


def parse(raw: str) -> list[str]:
    """Hermes 0.19 ``_read_file``: split on the delimiter, strip, drop empties."""
    return [p.strip() for p in raw.split(DELIM) if p.strip()]


# ── determinism ────────────────────────────────────────────────────────────


def test_same_seed_and_clock_give_identical_files_and_rows(tmp_path: Path) -> None:
    a = build_demo_home(tmp_path / "a", seed=11, now=DEMO_NOW)
    b = build_demo_home(tmp_path / "b", seed=11, now=DEMO_NOW)
    fa, fb = file_bytes(a), file_bytes(b)
    assert set(fa) >= {"config.yaml", "memories/MEMORY.md", "memories/USER.md", "memlock/persist/manifest.json"}
    assert fa == fb
    assert db_rows(a) == db_rows(b)


def test_another_seed_changes_files_and_rows(tmp_path: Path) -> None:
    a = build_demo_home(tmp_path / "a", seed=1, now=DEMO_NOW)
    b = build_demo_home(tmp_path / "b", seed=2, now=DEMO_NOW)
    assert file_bytes(a)["memories/MEMORY.md"] != file_bytes(b)["memories/MEMORY.md"]
    assert db_rows(a)["sessions"] != db_rows(b)["sessions"]
    assert sorted(p.name for p in a.pending_dir.iterdir()) != sorted(p.name for p in b.pending_dir.iterdir())


def test_plan_is_pure_and_matches_the_build(demo_home_template) -> None:  # noqa: F811
    p1, p2 = demo_plan(7, DEMO_NOW), demo_plan(7, DEMO_NOW)
    assert p1 == p2
    assert demo_home_template.memory_file("memory").read_text(encoding="utf-8") == DELIM.join(p1.memory_entries)
    assert {f.stem for f in demo_home_template.pending_dir.glob("*.json")} == set(p1.pending_ids)


# ── memory files ───────────────────────────────────────────────────────────


@pytest.mark.parametrize("seed", range(8))
def test_memory_files_round_trip_and_sit_near_their_limits(tmp_path: Path, seed: int) -> None:
    plan = demo_plan(seed, DEMO_NOW)
    for entries, limit, band in ((plan.memory_entries, DEMO_MEMORY_LIMIT, MEMORY_USAGE_BAND),
                                 (plan.user_entries, DEMO_USER_LIMIT, USER_USAGE_BAND)):
        raw = DELIM.join(entries)
        assert parse(raw) == list(entries)  # round-trips: no padding, no empty entries
        assert len(set(entries)) == len(entries)  # Hermes would de-duplicate on load
        assert all(len(e) <= limit for e in entries)  # the drift guard's per-entry rule
        pct = 100 * len(raw) / limit
        assert band[0] <= pct <= band[1] and len(raw) <= limit
    assert plan.memory_entries.count(FLAGGED_MEMORY_ENTRY) == 1
    assert USER_REPLACE_TARGET in plan.user_entries


def test_memory_files_on_disk_have_hermes_exact_format(demo_home_template) -> None:  # noqa: F811
    for target in ("memory", "user"):
        raw = demo_home_template.memory_file(target).read_bytes()
        text = raw.decode("utf-8")
        assert not raw.startswith(b"\xef\xbb\xbf") and b"\r" not in raw
        assert not text.endswith("\n") and DELIM in text
        assert DELIM.join(parse(text)) == text


def test_config_has_limits_plugins_and_memlock(demo_home_template) -> None:  # noqa: F811
    cfg = load_config(demo_home_template)
    assert cfg.warnings == ()
    assert (cfg.memory_char_limit, cfg.user_char_limit) == (DEMO_MEMORY_LIMIT, DEMO_USER_LIMIT)
    assert cfg.write_approval is True
    assert "memlock" in cfg.plugins_enabled
    assert [a["id"] for a in cfg.memlock.anchors] == ["british-english", "prefer-pathlib"]
    assert cfg.memlock.max_reminder_chars == 80 and cfg.memlock.alert_floor == 70


# ── pending writes ─────────────────────────────────────────────────────────


def test_pending_writes_have_hermes_write_approval_shape(demo_home_template) -> None:  # noqa: F811
    files = sorted(demo_home_template.pending_dir.glob("*.json"))
    assert len(files) == 4
    user_entries = parse(demo_home_template.memory_file("user").read_text(encoding="utf-8"))
    for f in files:
        rec = json.loads(f.read_text(encoding="utf-8"))
        assert list(rec) == ["id", "subsystem", "action", "summary", "origin", "created_at", "payload"]
        assert f.stem == rec["id"] and len(rec["id"]) == 8 and int(rec["id"], 16) >= 0
        assert rec["subsystem"] == "memory" and rec["origin"] in {"foreground", "background_review"}
        assert isinstance(rec["created_at"], float) and rec["created_at"] < DEMO_NOW
        pay = rec["payload"]
        assert set(pay) == {"action", "target", "content", "old_text"} and pay["action"] == rec["action"]
        assert pay["target"] in {"memory", "user"} and pay["content"]
        assert rec["summary"].split(":", 1)[0] in {"add to memory", "add to user profile", "replace in user profile"}
        if pay["action"] == "replace":  # Hermes' substring rule finds exactly one entry
            assert sum(pay["old_text"] in e for e in user_entries) == 1


def test_exactly_two_pending_writes_are_hostile_by_core_scan(demo_home_template) -> None:  # noqa: F811
    from memdeck.core.memory import threats

    hostile = []
    for f in sorted(demo_home_template.pending_dir.glob("*.json")):
        rec = json.loads(f.read_text(encoding="utf-8"))
        if threats.scan(rec["payload"]["content"]):
            hostile.append(rec)
    assert len(hostile) == 2
    flagged = [e for t in ("memory", "user")
               for e in parse(demo_home_template.memory_file(t).read_text(encoding="utf-8")) if threats.scan(e)]
    assert flagged == [FLAGGED_MEMORY_ENTRY]


# ── state.db ───────────────────────────────────────────────────────────────


def test_sessions_cover_sources_rotation_and_one_live(demo_home_template) -> None:  # noqa: F811
    plan = demo_plan(7, DEMO_NOW)
    db = StateDB(demo_home_template.state_db)
    try:
        sessions = {s.id: s for s in db.sessions()}
        assert {s.source for s in sessions.values()} >= {"cli", "telegram", "cron"}
        live = db.live_session()
        assert live is not None and live.id == plan.live_session_id and live.ended_at is None
        assert max(s.started_at for s in sessions.values()) == live.started_at
        assert DEMO_NOW - 600 < live.last_active < DEMO_NOW
        parent, child = sessions[plan.session_ids["rotation_parent"]], sessions[plan.session_ids["rotation_child"]]
        assert parent.end_reason == "compression" and child.parent_session_id == parent.id
        rot = [e for e in db.compactions() if e.mode == "rotation"]
        assert [(e.session_id, e.child_session_id) for e in rot] == [(parent.id, child.id)]
    finally:
        db.close()


def test_live_session_has_exactly_two_in_place_compactions(demo_home_template) -> None:  # noqa: F811
    sid = demo_plan(7, DEMO_NOW).live_session_id
    db = StateDB(demo_home_template.state_db)
    try:
        events = db.compactions(sid)
    finally:
        db.close()
    assert [(e.mode, e.kind, e.merged) for e in events] == [("in_place", "current", False)] * 2
    conn = sqlite3.connect(f"file:{demo_home_template.state_db}?mode=ro", uri=True)
    try:
        summaries = [r[0] for r in conn.execute(
            "SELECT content FROM messages WHERE session_id = ? AND content LIKE ? ORDER BY id",
            (sid, SUMMARY_PREFIX_0_19[:40] + "%"))]
        batches = conn.execute("SELECT COUNT(*) FROM messages WHERE session_id = ? AND compacted = 1", (sid,)).fetchone()[0]
    finally:
        conn.close()
    # Summary 1 was archived by compaction 2; both carry Hermes' real 0.19 prefix.
    assert len(summaries) == 2 and all(s.startswith(SUMMARY_PREFIX_0_19 + "\n") for s in summaries)
    assert [match_summary(s).kind for s in summaries] == ["current", "current"]
    assert {e.summary_hash for e in events} == {match_summary(s).body_hash for s in summaries}
    assert batches > 0


def test_reminder_blocks_in_api_content_match_the_audit(demo_home_template) -> None:  # noqa: F811
    sid = demo_plan(7, DEMO_NOW).live_session_id
    conn = sqlite3.connect(f"file:{demo_home_template.state_db}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT content, api_content FROM messages WHERE session_id = ? AND api_content IS NOT NULL"
                            " ORDER BY id", (sid,)).fetchall()
    finally:
        conn.close()
    rows = [(c, a) for c, a in rows if "[Standing instructions — still active]" in a]
    assert len(rows) == 2
    for content, api in rows:  # the provider's fence first when it recalled something (Hermes' order)
        tail = api[len(content) + 2:]
        if tail.startswith("<memory-context>"):
            tail = tail[tail.index("</memory-context>") + len("</memory-context>\n\n"):]
        assert api.startswith(content + "\n\n") and tail.startswith("[Standing instructions — still active]\n  - ")
    assert "British English" in rows[0][1] and "Use uv, not pip" in rows[1][1]
    assert rows[1][1].endswith("(2 additional instruction(s) not shown — the user can run /guard to see the full list)")


# ── MemLock files ──────────────────────────────────────────────────────────


def test_memlock_session_file_tells_the_story(demo_home_template) -> None:  # noqa: F811
    plan = demo_plan(7, DEMO_NOW)
    path = demo_home_template.memlock_dir / f"{plan.live_session_id}.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    anchors = data["anchors"]
    assert len(anchors) == 6 and data["session_id"] == plan.live_session_id
    assert data["static_anchor_ids"] == ["british-english", "prefer-pathlib"]
    assert data["pinned_count"] == 4 == sum(a["pinned"] for a in anchors.values())
    assert [e["score"] for e in data["drift_log"]] == [67, 50] and data["integrity_score"] == 50
    ids = plan.anchor_ids
    assert data["drift_log"][0]["casualties"] == ["british-english", ids["commit"]]
    assert sorted(data["drift_log"][1]["casualties"]) == sorted([ids["uv"], ids["commit"], "prefer-pathlib"])
    assert {k for k, a in anchors.items() if a["drifted"]} == set(data["drift_log"][1]["casualties"])
    assert data["self_sha256"] == hashlib.sha256(
        json.dumps(anchors, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()
    assert data["last_compaction_at"] == data["drift_log"][-1]["time"] == data["last_alert_at"]


def test_anchor_apis_read_the_demo_and_find_one_rehydrated(demo_home_template) -> None:  # noqa: F811
    plan = demo_plan(7, DEMO_NOW)
    cfg = load_config(demo_home_template)
    store = AnchorStore(demo_home_template, cfg)
    report = store.load_pins_report()
    assert [p["id"] for p in report.pins] == [plan.anchor_ids["secrets"]] and report.quarantined == []
    db = StateDB(demo_home_template.state_db)
    try:
        audit = audit_session(db, store, plan.live_session_id, cfg)
    finally:
        db.close()
    states = {a.anchor.id: a.state for a in audit.anchors}
    ids = plan.anchor_ids
    assert states == {ids["secrets"]: "alive", ids["push"]: "alive", "british-english": "alive",
                      ids["uv"]: "rehydrated", ids["commit"]: "drifted", "prefer-pathlib": "drifted"}
    assert {a.anchor.id: a.scope for a in audit.anchors}[ids["secrets"]] == "global"
    assert audit.score == 50 and audit.compactions == 2
    assert [h["score"] for h in audit.history] == [67, 50]
    assert all(h["computed_score"] == h["score"] for h in audit.history)


def test_drift_does_not_depend_on_how_the_region_is_cut(demo_home_template) -> None:  # noqa: F811
    """The drifted anchors' probes are absent from *every* live row, the system prompt and the
    memory files, so an audit that counts the head and summary too gives the same verdicts."""
    plan = demo_plan(7, DEMO_NOW)
    data = json.loads((demo_home_template.memlock_dir / f"{plan.live_session_id}.json").read_text(encoding="utf-8"))
    anchors = list(data["anchors"].values())
    db = StateDB(demo_home_template.state_db)
    try:
        ev = db.compactions(plan.live_session_id)[-1]
        region = [m.as_dict() for m in db.region_after(ev)]
        info = db.session(plan.live_session_id)
    finally:
        db.close()
    conn = sqlite3.connect(f"file:{demo_home_template.state_db}?mode=ro", uri=True)
    sp = conn.execute("SELECT system_prompt FROM sessions WHERE id = ?", (info.id,)).fetchone()[0]
    conn.close()
    memory = [demo_home_template.memory_file(t).read_text(encoding="utf-8") for t in ("memory", "user")]
    wide = [{"role": "system", "content": sp}] + region + [{"role": "system", "content": m} for m in memory]
    narrow = audited_region(region, sp)
    for view in (wide, narrow):
        drifted = {k for k, v in keyword_audit(anchors, view).items() if not v.alive}
        assert drifted == {a["id"] for a in anchors if a["drifted"]}


def test_global_pin_manifest_is_consistent(demo_home_template) -> None:  # noqa: F811
    persist = demo_home_template.memlock_dir / "persist"
    manifest = json.loads((persist / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["version"] == 1 and isinstance(manifest["generated_at"], float)
    pins = sorted(p for p in persist.glob("*.json") if p.name != "manifest.json")
    assert set(manifest["pins"]) == {p.stem for p in pins} and len(pins) == 1
    for p in pins:
        data = p.read_bytes()
        assert manifest["pins"][p.stem] == {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
        rec = json.loads(data)
        assert rec["scope"] == "global" and rec["pinned"] is True


def test_reminder_plan_matches_the_stored_block(demo_home_template) -> None:  # noqa: F811
    plan = demo_plan(7, DEMO_NOW)
    cfg = load_config(demo_home_template)
    data = json.loads((demo_home_template.memlock_dir / f"{plan.live_session_id}.json").read_text(encoding="utf-8"))
    anchors = list(data["anchors"].values())
    block, selected, remaining = plan_reminder(anchors, data["drift_log"][-1]["casualties"], cfg)
    assert selected == [plan.anchor_ids["uv"]] and len(remaining) == 2
    conn = sqlite3.connect(f"file:{demo_home_template.state_db}?mode=ro", uri=True)
    api = conn.execute("SELECT api_content FROM messages WHERE session_id = ? AND api_content LIKE ?"
                       " ORDER BY id DESC LIMIT 1", (plan.live_session_id, "%[Standing instructions%")).fetchone()[0]
    conn.close()
    assert api.endswith("\n\n" + block)


# ── where the demo lives ───────────────────────────────────────────────────


def test_refuses_a_non_empty_foreign_directory_and_leaves_it(tmp_path: Path) -> None:
    target = tmp_path / "mine"
    target.mkdir()
    (target / "notes.txt").write_text("keep me")
    with pytest.raises(MemdeckError, match="not empty"):
        build_demo_home(target)
    assert [p.name for p in target.iterdir()] == ["notes.txt"]


def test_demo_home_dir_follows_xdg_cache(tmp_path: Path) -> None:
    assert demo_home_dir(3, {"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "memdeck" / "demo-3"
    assert demo_home_dir(3, {}).parts[-3:] == (".cache", "memdeck", "demo-3")


def test_fresh_demo_home_wipes_previous_edits(tmp_path: Path) -> None:
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    home = fresh_demo_home(5, now=DEMO_NOW, env=env)
    assert home.path == demo_home_dir(5, env) and (home.path / DEMO_MARKER).exists()
    before = file_bytes(home)
    home.memory_file("memory").write_text("edited by a previous run", encoding="utf-8")
    (home.pending_dir / "deadbeef.json").write_text("{}", encoding="utf-8")
    again = fresh_demo_home(5, now=DEMO_NOW, env=env)
    assert again.path == home.path and file_bytes(again) == before


def test_fresh_demo_home_falls_back_to_a_temp_dir_when_the_cache_is_foreign(tmp_path: Path) -> None:
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    foreign = demo_home_dir(5, env)
    foreign.mkdir(parents=True)
    (foreign / "precious").write_text("x")
    home = fresh_demo_home(5, now=DEMO_NOW, env=env)
    try:
        assert home.path != foreign and (home.path / DEMO_MARKER).exists()
        assert [p.name for p in foreign.iterdir()] == ["precious"]
    finally:
        import shutil

        shutil.rmtree(home.path)


def test_demo_fixture_is_a_private_copy(demo_home, demo_home_template) -> None:  # noqa: F811
    demo_home.memory_file("memory").write_text("changed", encoding="utf-8")
    assert demo_home_template.memory_file("memory").read_text(encoding="utf-8") != "changed"


# ── big homes ──────────────────────────────────────────────────────────────


@pytest.mark.parametrize("fts", [True, False])
def test_big_home_adds_rows_and_keeps_the_live_session(tmp_path: Path, fts: bool) -> None:
    base = build_demo_home(tmp_path / "small")
    small = db_rows(base)
    home = build_big_home(tmp_path / "big", messages=2500, per_session=1000, fts=fts)
    conn = sqlite3.connect(f"file:{home.state_db}?mode=ro", uri=True)
    try:
        n = conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
        n_sessions = conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]
        triggers = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
        fts_rows = conn.execute("SELECT COUNT(*) FROM messages_fts").fetchone()[0]
    finally:
        conn.close()
    assert n == len(small["messages"]) + 2500 and n_sessions == len(small["sessions"]) + 3
    assert len(triggers) == 6
    assert fts_rows == (n if fts else len(small["messages"]))
    db = StateDB(home.state_db)
    try:
        assert db.live_session().id == demo_plan().live_session_id
    finally:
        db.close()


def test_module_exposes_the_documented_api() -> None:
    for name in ("build_demo_home", "build_big_home", "demo_home_dir", "fresh_demo_home", "demo_plan", "DEMO_NOW"):
        assert hasattr(demo_mod, name)
    assert DEMO_NOW == 1784824800.0


def test_a_second_demo_does_not_wipe_the_home_of_one_still_open(tmp_path: Path) -> None:
    """Issue 8 #9: each running `memdeck --demo` keeps its own home."""
    import subprocess
    import sys

    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    code = ("import sys; from memdeck.core.demo import fresh_demo_home; "
            f"h = fresh_demo_home(5, env={env!r}); print(h.path, flush=True); sys.stdin.read()")
    first = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        first_path = Path(first.stdout.readline().strip())  # the first demo is open
        assert first_path == demo_home_dir(5, env)
        first_path.joinpath("memories", "MEMORY.md").write_text("edited in the open demo", encoding="utf-8")
        second = fresh_demo_home(5, now=DEMO_NOW, env=env)
        assert second.path != first_path and second.path.parent == first_path.parent
        assert first_path.joinpath("memories", "MEMORY.md").read_text(encoding="utf-8") == "edited in the open demo"
    finally:
        first.stdin.close()
        first.wait(timeout=30)


# ── a newcomer's first ten minutes (issue 22 #13): every panel has something to show ──


@pytest.mark.parametrize(("query", "at_least"), [("deploy", 2), ("redis", 1), ("postgres", 1), ("rate limiting", 1)])
def test_recall_answers_the_obvious_queries_from_past_sessions(demo_home_template, query: str, at_least: int) -> None:  # noqa: F811
    from memdeck.core.sessions.recall import recall

    plan = demo_plan(7, DEMO_NOW)
    db = StateDB(demo_home_template.state_db)
    try:
        hits = recall(db, query, limit=10, current_session_id=plan.live_session_id)
    finally:
        db.close()
    assert len({h.session_id for h in hits}) >= at_least, (query, hits)
    assert plan.live_session_id not in {h.session_id for h in hits}  # Hermes leaves the live session out


def test_history_holds_changes_by_every_kind_of_writer(demo_home_template) -> None:  # noqa: F811
    from memdeck.core.demo.changes import demo_changes
    from memdeck.core.demo.story import ARCHIVED_MEMORY_ENTRY, MEMORY_FIXED, PUSH_BEFORE, USER_FIXED, USER_NAME_BEFORE
    from memdeck.core.history import list_changes

    plan = demo_plan(7, DEMO_NOW)
    ch = demo_changes(plan)
    got = [(c.actor, c.kind, c.target, c.op, c.before, c.after if c.kind == "memory" else None,
            c.attribution.get("op"), c.attribution.get("archive_id")) for c in reversed(list_changes(demo_home_template))]
    live, review = plan.live_session_id, plan.session_ids["review"]
    assert got == [
        ("hermes", "memory", "memory", "added", None, MEMORY_FIXED[2], None, None),         # Hermes' memory tool
        ("external", "memory", "user", "replaced", USER_NAME_BEFORE, USER_FIXED[0], None, None),  # a hand edit
        ("pending", "memory", "user", "added", None, ch.background_entry, None, None),      # background review, applied
        ("external", "anchor", None, "anchor_changed", got[3][4], None, None, None),        # MemLock's edit of a pin
        ("hermes", "memory", "memory", "added", None, MEMORY_FIXED[1], None, None),         # the live session's call
        ("cli", "memory", "memory", "added", None, ch.approved_entry, "add", None),         # memdeck approved a write
        ("cli", "memory", "memory", "removed", ARCHIVED_MEMORY_ENTRY, None, "archive", 1),  # memdeck archived an entry
    ]
    changes = list(reversed(list_changes(demo_home_template)))
    assert changes[0].attribution["session_id"] == review and changes[4].attribution["session_id"] == live
    assert changes[2].attribution["origin"] == "background_review"
    assert changes[5].attribution["pending_id"] == plan.applied_pending_ids[1]
    assert json.loads(changes[3].before)["priority"] == PUSH_BEFORE["priority"] and changes[3].session_id == live
    assert [c.until for c in changes] == sorted(c.until for c in changes) and changes[-1].until <= DEMO_NOW


def test_the_archive_holds_the_archived_entry(demo_home_template) -> None:  # noqa: F811
    from memdeck.core.deck.archive import items
    from memdeck.core.demo.story import ARCHIVED_MEMORY_ENTRY

    (item,) = items(demo_home_template, kind=None, state="archived")
    assert item.text == ARCHIVED_MEMORY_ENTRY and item.archive_id == 1


def test_opening_the_demo_finds_nothing_new(demo_home) -> None:  # noqa: F811
    """memdeck saw the home as it is: the dashboard's first look records no change (no toast)."""
    from memdeck.core.history import observe

    assert observe(demo_home, now=DEMO_NOW) == []


def test_each_sessions_frozen_prompt_holds_the_memory_of_its_start(demo_home_template) -> None:  # noqa: F811
    from memdeck.core.demo.changes import demo_changes
    from memdeck.core.demo.story import ARCHIVED_MEMORY_ENTRY, MEMORY_FIXED

    plan = demo_plan(7, DEMO_NOW)
    ch = demo_changes(plan)
    conn = sqlite3.connect(f"file:{demo_home_template.state_db}?mode=ro", uri=True)
    try:
        prompts = dict(conn.execute("SELECT id, system_prompt FROM sessions"))
    finally:
        conn.close()
    review, live = prompts[plan.session_ids["review"]], prompts[plan.live_session_id]
    assert MEMORY_FIXED[2] not in review  # the review session added it with the memory tool
    assert MEMORY_FIXED[2] in live and MEMORY_FIXED[1] not in live  # the live session adds the second
    assert ARCHIVED_MEMORY_ENTRY in live and ch.approved_entry not in live  # archived / approved later


def test_the_live_session_carries_holographic_recalls_turn_by_turn(demo_home_template) -> None:  # noqa: F811
    """Issue 39 item 7: the demo configures Hermes' bundled holographic provider, and its recalls
    are recorded as Hermes records them (a ``<memory-context>`` fence first in ``api_content``),
    so the Context panel's "injected, turn by turn" shows a provider's injections."""
    from memdeck.core.context.prompts import PromptCache
    from memdeck.core.context.report import build_report, disk_entries
    from memdeck.core.hermes_version import HermesVersion
    from memdeck.core.sessions.statedb import StateDB

    cfg = load_config(demo_home_template)
    assert cfg.raw["memory"]["provider"] == "holographic"
    with StateDB(demo_home_template.state_db) as db:
        stamp = next(s for s in db.prompt_stamps() if s.session_id == demo_plan(7, DEMO_NOW).live_session_id)
        rep = build_report(db, demo_home_template, cfg, stamp, cache=PromptCache(), disk=disk_entries(demo_home_template),
                           version=HermesVersion.of("0.19"))
    injected = rep.to_dict()["injected"]
    provider = [i for i in injected if i["source"] == "provider"]
    assert len(provider) == 3 and {i["name"] for i in provider} == {"holographic"}
    assert all(i["recalled"].startswith("## Holographic Memory\n- [") for i in provider)
    assert [i["source"] for i in injected].count("memlock") == 1
