"""The MemLock file store: every version round-trips, naming rules, manifest, concurrency."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
from pathlib import Path

import pytest

from memdeck.core.anchors.files import default_session_id, safe_pin_stem, safe_sid, safe_sid_v1
from memdeck.core.anchors.model import Anchor, SessionAnchors, anchors_sha256
from memdeck.core.anchors.store import AnchorStore
from memdeck.core.errors import Refused
from memdeck.core.home import HermesHome
from tests.helpers.anchors import SAMPLE_V02, sample_v04, sample_v05, write_memlock_file


def test_safe_sid_both_versions() -> None:
    assert safe_sid_v1("s/1.x") == "s_1_x"
    assert safe_sid("sess/a") == "sess_slash_a"
    assert safe_sid("sess.a") == "sess_dot_a"
    assert safe_sid("a b:c") == "a_b_c" == safe_sid_v1("a b:c")
    assert safe_sid("20260617_212608_ab12cd") == "20260617_212608_ab12cd"
    assert safe_pin_stem("manifest") == "manifest_pin"
    assert safe_pin_stem("pin/x") == "pin_x"


@pytest.mark.parametrize("sample,stem", [
    (SAMPLE_V02, "20260617_212608_ab12cd"),
    (sample_v04(), "sess_a_b"),  # written by an old MemLock under the v1 name
    (sample_v05(), "20260701_090000_ffee00"),
])
def test_every_version_reads_and_round_trips(hermes_home: HermesHome, sample, stem) -> None:
    write_memlock_file(hermes_home.memlock_dir, stem, sample)
    store = AnchorStore(hermes_home)
    sid = sample["session_id"]
    s = store.load_session(sid)
    assert s.session_id == sid
    assert list(s.anchors) == list(sample["anchors"])
    assert s.integrity_score == sample["integrity_score"]
    assert s.drift_log[0]["casualties"] == sample["drift_log"][0]["casualties"]
    # A no-op mutation writes nothing.
    before = store.find_session_file(sid).read_bytes()
    store.update_session(sid, lambda s: None)
    assert store.find_session_file(sid).read_bytes() == before
    # A locked write keeps every key (known and unknown) and writes the newest schema + name.
    store.update_session(sid, lambda s: setattr(s, "last_reinject_turn", 7))
    out = json.loads(store.session_path(sid).read_text(encoding="utf-8"))
    for key, value in sample.items():
        if key not in ("self_sha256", "last_reinject_turn"):
            assert out[key] == value, key
    assert out["last_reinject_turn"] == 7
    assert out["self_sha256"] == anchors_sha256(out["anchors"])
    assert "turn_count" in out


def test_v05_extras_history_and_sha(hermes_home: HermesHome) -> None:
    d = sample_v05()
    write_memlock_file(hermes_home.memlock_dir, "20260701_090000_ffee00", d)
    s = AnchorStore(hermes_home).load_session("20260701_090000_ffee00")
    assert s.sha_ok is True
    assert s.turn_count == 17
    assert s.extra == {"some_future_key": [1, 2, 3]}
    assert s.anchors["format-bullets"].extra == {"future_field": {"x": 1}}
    assert s.anchors["format-bullets"].pinned is False
    assert s.anchors["pin_1a2b3c4d"].history is not None


def test_tampered_self_sha_is_advisory(hermes_home: HermesHome) -> None:
    d = sample_v05()
    d["self_sha256"] = "0" * 64
    write_memlock_file(hermes_home.memlock_dir, "20260701_090000_ffee00", d)
    s = AnchorStore(hermes_home).load_session("20260701_090000_ffee00")
    assert s.sha_ok is False and len(s.anchors) == 2


def test_session_id_from_inside_and_newest_file_wins(hermes_home: HermesHome) -> None:
    store = AnchorStore(hermes_home)
    write_memlock_file(hermes_home.memlock_dir, "sess_a_b", sample_v04())
    assert [i.session_id for i in store.list_sessions()] == ["sess/a.b"]
    store.update_session("sess/a.b", lambda s: setattr(s, "turn_count", 5))
    assert store.session_path("sess/a.b").name == "sess_slash_a_dot_b.json"
    infos = store.list_sessions()
    assert [i.session_id for i in infos] == ["sess/a.b"]
    assert infos[0].path.name == "sess_slash_a_dot_b.json"
    assert store.load_session("sess/a.b").turn_count == 5
    assert default_session_id(store) == "sess/a.b"
    assert default_session_id(store, "live-1") == "live-1"


def test_missing_keys_take_template_defaults(hermes_home: HermesHome) -> None:
    write_memlock_file(hermes_home.memlock_dir, "x", {"anchors": {"k": {"text": "hello there friend"}}})
    s = AnchorStore(hermes_home).load_session("x")
    a = s.anchors["k"]
    assert (a.id, a.reminder, a.priority, a.probes, a.pinned, a.drifted) == ("k", "hello there friend", 50, [], False, False)
    assert (s.integrity_score, s.drift_log, s.last_reinject_turn, s.turn_count) == (None, [], 0, 0)


def test_corrupt_file_refused_not_overwritten(hermes_home: HermesHome) -> None:
    hermes_home.memlock_dir.mkdir(parents=True)
    p = hermes_home.memlock_dir / "bad.json"
    p.write_text("{not json", encoding="utf-8")
    store = AnchorStore(hermes_home)
    with pytest.raises(Refused) as ei:
        store.update_session("bad", lambda s: setattr(s, "turn_count", 1))
    assert ei.value.code == "unreadable"
    assert p.read_text(encoding="utf-8") == "{not json"
    assert [i.error is not None for i in store.list_sessions()] == [True]


def test_mutate_raising_writes_nothing(hermes_home: HermesHome) -> None:
    store = AnchorStore(hermes_home)

    def boom(s: SessionAnchors) -> None:
        s.turn_count = 99
        raise Refused("no", "invalid")

    with pytest.raises(Refused):
        store.update_session("s1", boom)
    assert not store.session_path("s1").exists()


def test_written_file_matches_memlock_format(hermes_home: HermesHome) -> None:
    store = AnchorStore(hermes_home)
    store.update_session("s1", lambda s: s.add(Anchor(id="pin_1", text="Use — dashes", reminder="Use — dashes", probes=["dashes"])))
    raw = store.session_path("s1").read_text(encoding="utf-8")
    assert "—" in raw and not raw.endswith("\n") and raw.startswith('{\n  "session_id": "s1"')
    data = json.loads(raw)
    assert data["pinned_count"] == 1
    assert list(data["anchors"]["pin_1"]) == ["id", "text", "reminder", "priority", "probes", "pinned", "drifted", "last_alive_turn"]
    leftovers = [p.name for p in hermes_home.memlock_dir.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def test_record_audit_marks_scores_and_caps_log() -> None:
    from memdeck.core.anchors.audit import keyword_audit

    s = SessionAnchors("s")
    s.add(Anchor(id="a", text="t", reminder="t", probes=["alpha"]))
    s.add(Anchor(id="b", text="t", reminder="t", probes=["bravo"]))
    for i in range(25):
        score, cas = s.record_audit(keyword_audit(s.anchors.values(), ["alpha"]), turn=i + 1, now=1000.0 + i)
    assert (score, cas) == (50, ["b"])
    assert s.anchors["a"].last_alive_turn == 25 and s.anchors["b"].drifted
    assert len(s.drift_log) == 20 and s.drift_log[0]["time"] == 1005.0
    assert s.integrity_score == 50


# ── persist/ and the manifest ────────────────────────────────────────────────


def _manifest(home: HermesHome) -> dict:
    return json.loads((home.memlock_dir / "persist" / "manifest.json").read_text(encoding="utf-8"))


def test_save_pin_keeps_manifest_consistent(hermes_home: HermesHome) -> None:
    store = AnchorStore(hermes_home)
    path = store.save_pin({"id": "pin_abcd1234", "text": "Use metric units", "probes": ["metric"], "scope": "global"})
    m = _manifest(hermes_home)
    assert m["version"] == 1
    raw = path.read_bytes()
    assert m["pins"]["pin_abcd1234"] == {"sha256": hashlib.sha256(raw).hexdigest(), "size": len(raw)}
    assert store.load_pins_report().quarantined == []
    assert [p["id"] for p in store.load_pins()] == ["pin_abcd1234"]
    assert store.remove_pin("pin_abcd1234") is True
    assert _manifest(hermes_home)["pins"] == {}
    assert store.remove_pin("pin_abcd1234") is False


def test_manifest_m1_m3_rules(hermes_home: HermesHome) -> None:
    store = AnchorStore(hermes_home)
    pdir = hermes_home.memlock_dir / "persist"
    store.save_pin({"id": "pin_good", "text": "good", "scope": "global"})
    original = _manifest(hermes_home)["pins"]["pin_good"]["sha256"]
    # a pin written by another writer without a manifest entry is merged in (M1)
    (pdir / "pin_other.json").write_text(json.dumps({"id": "pin_other", "text": "other", "scope": "global"}), encoding="utf-8")
    # tampering after the manifest was written
    tampered = json.loads((pdir / "pin_good.json").read_text(encoding="utf-8"))
    tampered["text"] = "tampered"
    (pdir / "pin_good.json").write_text(json.dumps(tampered), encoding="utf-8")
    report = store.load_pins_report()
    assert report.quarantined == ["pin_good"]
    assert [p["id"] for p in report.pins] == ["pin_other"]
    store.save_pin({"id": "pin_new", "text": "new", "scope": "global"})
    m = _manifest(hermes_home)["pins"]
    assert set(m) == {"pin_good", "pin_other", "pin_new"}
    assert m["pin_good"]["sha256"] == original  # M3: tampered bytes never re-baselined
    assert "pin_good" in store.load_pins_report().quarantined


def test_manifest_pin_id_reserved(hermes_home: HermesHome) -> None:
    store = AnchorStore(hermes_home)
    path = store.save_pin({"id": "manifest", "text": "sneaky"})
    assert path.name == "manifest_pin.json"
    assert _manifest(hermes_home)["pins"].keys() == {"manifest_pin"}


def test_corrupt_and_incomplete_pins_skipped(hermes_home: HermesHome) -> None:
    pdir = hermes_home.memlock_dir / "persist"
    pdir.mkdir(parents=True)
    (pdir / "a.json").write_text("{", encoding="utf-8")
    (pdir / "b.json").write_text(json.dumps({"id": "b"}), encoding="utf-8")
    (pdir / "c.json.tmp").write_text("{}", encoding="utf-8")
    rep = AnchorStore(hermes_home).load_pins_report()
    assert rep.pins == [] and set(rep.skipped) == {"a", "b"}


# ── concurrency: several processes through update_session ───────────────────


def _pin_many(home: str, worker: int, n: int) -> None:
    store = AnchorStore(Path(home))
    for i in range(n):
        aid = f"w{worker}_{i}"
        store.update_session("shared", lambda s, aid=aid: s.add(Anchor(id=aid, text=aid, reminder=aid, probes=[aid])))


def test_concurrent_writers_lose_nothing(hermes_home: HermesHome) -> None:
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_pin_many, args=(str(hermes_home.path), w, 15)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert all(p.exitcode == 0 for p in procs)
    s = AnchorStore(hermes_home).load_session("shared")
    assert len(s.anchors) == 60
    assert s.pinned_count == 60
    assert s.sha_ok is True


@pytest.mark.parametrize("key,value", [
    ("priority", float("inf")), ("priority", float("nan")), ("priority", 1e308 * 10), ("last_alive_turn", float("-inf")),
])
def test_non_finite_numbers_in_an_anchor_read_as_defaults(hermes_home: HermesHome, key, value) -> None:
    """``json`` reads ``Infinity``/``NaN``/``1e999`` as non-finite floats; int() of them raises."""
    rec = {"id": "k", "text": "hello there friend", key: value}
    write_memlock_file(hermes_home.memlock_dir, "x", {"session_id": "x", "anchors": {"k": rec}})
    a = AnchorStore(hermes_home).load_session("x").anchors["k"]
    assert (a.priority, a.last_alive_turn) == (50, 0)


@pytest.mark.parametrize("key,value", [
    ("pinned_count", float("inf")), ("turn_count", float("nan")), ("last_reinject_turn", float("inf")),
    ("static_anchor_ids", 3.5), ("static_anchor_ids", "abc"), ("static_anchor_ids", {"a": 1}),
])
def test_hostile_session_fields_read_as_defaults(hermes_home: HermesHome, key, value) -> None:
    write_memlock_file(hermes_home.memlock_dir, "x", {"session_id": "x", key: value,
                                                      "anchors": {"k": {"id": "k", "text": "hello"}}})
    store = AnchorStore(hermes_home)
    s = store.load_session("x")
    assert (s.pinned_count, s.turn_count, s.last_reinject_turn) == (0, 0, 0)
    assert s.static_anchor_ids == []
    assert [i.session_id for i in store.list_sessions()] == ["x"]
