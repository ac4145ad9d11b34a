"""build_status: the status --json contract."""

from __future__ import annotations

import json

from memdeck.core.config import Config, load_config
from memdeck.core.home import HermesHome
from memdeck.core.memory.entries import entry_id
from memdeck.core.memory.store import MemoryStore
from memdeck.core.overview import status as status_mod
from tests.helpers.memory import HOSTILE, write_raw


def test_status_contract(hermes_home: HermesHome) -> None:
    s = MemoryStore(hermes_home, Config())
    s.add("memory", "First fact")
    s.add("user", "Likes tea")
    s.archive(None, "tea")
    write_raw(hermes_home, "memory", "First fact\n§\n" + HOSTILE["ssh_access"])
    d = hermes_home.pending_dir
    d.mkdir(parents=True)
    (d / "abcd0001.json").write_text(json.dumps({"id": "abcd0001", "origin": "foreground", "created_at": 1,
                                                "payload": {"action": "add", "target": "user", "content": "x"}}))
    (hermes_home.path / "config.yaml").write_text("memory:\n  memory_char_limit: lots\n")
    st = status_mod.build_status(hermes_home, load_config(hermes_home))
    json.dumps(st)  # serialisable
    assert st["home"] == str(hermes_home.path)
    mem = st["memory"]["memory"]
    assert mem["limit"] == 2200 and mem["chars"] == len("First fact\n§\n" + HOSTILE["ssh_access"])
    assert mem["entries"][0] == {"id": entry_id("First fact"), "text": "First fact", "chars": 10, "threats": []}
    assert mem["entries"][1]["threats"] == ["ssh_access"]
    assert st["memory"]["user"]["entries"] == [] and st["memory"]["user"]["limit"] == 1375
    old_keys = ("id", "action", "target", "origin", "summary", "created_at", "threats", "malformed")
    assert [{k: p[k] for k in old_keys} for p in st["pending"]] == [
        {"id": "abcd0001", "action": "add", "target": "user", "origin": "foreground", "summary": "",
         "created_at": 1.0, "threats": [], "malformed": None}]
    # issue 25: who staged it and what approving it would do now
    assert {k: st["pending"][0][k] for k in ("subsystem", "staged_by", "state", "reason")} == {
        "subsystem": "memory", "staged_by": None, "state": "clean", "reason": None}
    assert st["pending"][0]["age_s"] > 0
    assert st["provider"] == {"name": None, "memory_enabled": True, "user_profile_enabled": True,
                              "authoritative": "built-in MEMORY + USER", "rules": "0.17-0.20", "found": None,
                              "settings": None, "notes": st["provider"]["notes"]}
    assert st["archived"] == 1
    assert st["config_warnings"] and "memory_char_limit" in st["config_warnings"][0]


def test_sections_are_merged_and_isolated(hermes_home: HermesHome, monkeypatch) -> None:
    monkeypatch.setattr(status_mod, "_REGISTERED", {})
    status_mod.register_section("extra", lambda h, c: {"ok": True})
    status_mod.register_section("broken", lambda h, c: 1 / 0)
    st = status_mod.build_status(hermes_home)
    assert st["extra"] == {"ok": True} and "ZeroDivisionError" in st["broken"]["error"]


def test_status_of_an_empty_home_creates_nothing(hermes_home: HermesHome) -> None:
    st = status_mod.build_status(hermes_home)
    assert st["archived"] == 0 and st["pending"] == [] and not hermes_home.memdeck_dir.exists()


def test_sessions_and_anchors_sections_are_merged(tmp_path) -> None:
    from memdeck.core.demo import build_demo_home

    home = build_demo_home(tmp_path / "demo")
    st = status_mod.build_status(home)
    assert st["section_errors"] == {}
    live = [s for s in st["sessions"] if s["live"]]
    assert len(live) == 1 and live[0]["compactions"] == 2
    assert set(live[0]) >= {"id", "title", "source", "started_at", "ended_at", "message_count", "compactions", "live"}
    assert st["state_db"]["state"] == "ok"
    states = {a["state"] for a in st["anchors"]}
    assert {"alive", "drifted", "rehydrated"} <= states
    assert st["integrity"]["session_id"] == live[0]["id"]
    assert [h["score"] for h in st["integrity"]["history"]] == [67, 50]
    assert st["drift_log"] and set(st["drift_log"][0]) >= {"time", "session_id", "score", "casualties"}


def test_a_failing_merged_section_is_reported_not_raised(hermes_home: HermesHome, monkeypatch) -> None:
    def missing(reader, snap):
        raise AttributeError("no_such_function")

    monkeypatch.setattr(status_mod, "_sessions", missing)  # the sessions/state_db serialiser breaks
    st = status_mod.build_status(hermes_home)
    assert "sessions" not in st and "AttributeError" in st["section_errors"]["statedb"]
    assert st["anchors"] == []


def test_status_counts_hygiene_findings_by_the_lexical_method(hermes_home: HermesHome) -> None:
    s = MemoryStore(hermes_home, Config())
    s.add("memory", "Project uses uv for Python dependency management")
    s.add("memory", "Python dependencies in this project are managed with uv")
    s.add("user", "User prefers tabs for indentation")
    s.add("user", "Never use tabs for indentation")
    st = status_mod.build_status(hermes_home)
    assert st["hygiene"]["method"] == "lexical"
    assert st["hygiene"]["counts"] == {"duplicate": 1, "contradiction": 1, "stale": 0, "wasteful": 0}
    assert st["hygiene"]["chars_saved"] == len("Project uses uv for Python dependency management") + 3


def test_a_failed_part_is_a_section_error_worded_by_its_own_failure(hermes_home: HermesHome, monkeypatch) -> None:
    """The profile part fails once: ``section_errors`` holds its whole text (both lines, where the
    banner keeps the first), and the source is not asked again to word it (issue 32)."""
    from memdeck.core.sessions import profile

    calls: list[object] = []

    def broken(home: object, *args: object, **kwargs: object) -> object:
        calls.append(home)
        raise RuntimeError("state.db layout unknown\nsecond line")

    monkeypatch.setattr(profile, "detect_profile", broken)
    st = status_mod.build_status(hermes_home)
    assert st["section_errors"]["profile"] == "RuntimeError: state.db layout unknown\nsecond line"
    assert "hermes" not in st and len(calls) == 1


def test_status_only_sections_are_parts_read_when_asked(hermes_home: HermesHome, monkeypatch) -> None:
    """``hygiene``, ``detection``, every drift log and the global pins are parts read only when
    asked for: the dashboard's read of every part does not read them, ``status`` does, once, and
    a hygiene that fails is ``section_errors["hygiene"]`` from the part."""
    from memdeck.core.hygiene import detect
    from memdeck.core.overview.parts import PARTS
    from memdeck.core.overview.reader import HomeReader

    asked = {p.name for p in PARTS if p.asked}
    assert asked == {"drift_logs", "global_pins", "detection", "hygiene"}
    calls: list[object] = []
    real = detect.hygiene_report

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(args)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(detect, "hygiene_report", counted)
    reader = HomeReader(hermes_home, load_config(hermes_home))
    try:
        snap = reader.read()  # every part: not the asked ones
        assert snap.hygiene is None and snap.detection is None and calls == []
    finally:
        reader.close()
    st = status_mod.build_status(hermes_home)
    assert len(calls) == 1 and st["hygiene"]["method"] == "lexical" and st["detection"]["active"] == "keyword"

    def broken(*args: object, **kwargs: object) -> object:
        raise OSError("hygiene cannot read")

    monkeypatch.setattr(detect, "hygiene_report", broken)
    st = status_mod.build_status(hermes_home)
    assert "hygiene" not in st and st["section_errors"]["hygiene"] == "OSError: hygiene cannot read"


def test_a_failed_provider_part_is_its_error_and_the_queue_still_judged(hermes_home: HermesHome, monkeypatch) -> None:
    """The provider settings fail: ``section_errors["provider"]`` is the part's failure, read once,
    and the pending writes are still listed (the review part judged them with memory.provider)."""
    from memdeck.core import provider_settings

    calls: list[object] = []

    def broken(*args: object, **kwargs: object) -> object:
        calls.append(args)
        raise ValueError("plugins/ unreadable")

    monkeypatch.setattr(provider_settings, "provider_settings", broken)
    d = hermes_home.pending_dir
    d.mkdir(parents=True)
    (d / "abcd0001.json").write_text(json.dumps({"id": "abcd0001", "origin": "foreground", "created_at": 1,
                                                "payload": {"action": "add", "target": "user", "content": "x"}}))
    st = status_mod.build_status(hermes_home)
    assert st["section_errors"]["provider"] == "ValueError: plugins/ unreadable" and "provider" not in st
    assert [p["id"] for p in st["pending"]] == ["abcd0001"] and st["pending"][0]["state"] == "clean"
    assert len(calls) == 1
