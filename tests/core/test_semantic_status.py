"""Semantic detection when it cannot run, and the cost of a first semantic history (issue 28 #3,
#4), without the real weights: ``status --json`` ``detection``, the Integrity panel's line, the
bounded newest-first history that resumes after an interruption."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from memdeck.core.anchors import encoder as enc_mod
from memdeck.core.anchors import integrity_history as history_mod
from memdeck.core.anchors.integrity_history import integrity_history, session_events
from memdeck.core.anchors.store import AnchorStore
from memdeck.core.cli import main
from memdeck.core.config import load_config
from memdeck.core.deck import db as deckdb
from memdeck.core.demo import build_demo_home, demo_plan
from memdeck.core.home import HermesHome
from memdeck.core.sessions.statedb import StateDB


def _semantic(home: HermesHome, model: str) -> None:
    text = home.config_path.read_text(encoding="utf-8").replace('detection: "keyword"', "detection: semantic")
    home.config_path.write_text(text + "\n# issue 28\n", encoding="utf-8")
    with open(home.config_path, "a", encoding="utf-8") as fh:
        fh.write("")
    cfg = home.config_path.read_text(encoding="utf-8")
    cfg = cfg.replace("memlock:\n", f"memlock:\n  embedding_model: {json.dumps(model)}\n", 1)
    home.config_path.write_text(cfg, encoding="utf-8")


def _status(capsys, home: HermesHome) -> dict:
    assert main(["--home", str(home.path), "status", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def demo(tmp_path: Path) -> HermesHome:
    enc_mod.clear_process_cache()
    history_mod.clear_process_cache()
    return build_demo_home(tmp_path / "home")


def test_keyword_detection_is_reported_plainly(demo: HermesHome, capsys) -> None:
    d = _status(capsys, demo)["detection"]
    assert d == {"configured": "keyword", "active": "keyword", "model": None, "weights_sha256_ok": None,
                 "reason": None, "model_path": None}


def test_a_model_memlock_cannot_load_is_said_never_silent(demo: HermesHome, tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty-hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("SENTENCE_TRANSFORMERS_HOME", raising=False)
    _semantic(demo, "all-MiniLM-L6-v2")
    assert load_config(demo).memlock.detection == "semantic"
    status = _status(capsys, demo)
    d = status["detection"]
    assert (d["configured"], d["active"], d["model"], d["weights_sha256_ok"]) == ("semantic", "keyword", "all-MiniLM-L6-v2", None)
    assert "not in the Hugging Face cache" in d["reason"] and "retries loading the model at every audit" in d["reason"]
    # the audit says so too, and its verdicts are the keyword fallback's
    assert main(["--home", str(demo.path), "audit"]) == 0
    out = capsys.readouterr().out
    assert "keyword-fallback" in out and "detection: semantic configured, keyword in use" in out


def test_a_different_model_is_refused_with_the_reason(demo: HermesHome, tmp_path: Path, capsys) -> None:
    other = tmp_path / "other-model"
    other.mkdir()
    (other / "model.safetensors").write_bytes(b"\x00" * 1000)
    _semantic(demo, str(other))
    d = _status(capsys, demo)["detection"]
    assert (d["active"], d["weights_sha256_ok"], d["model_path"]) == ("keyword", False, str(other))
    assert "a different model than the one memdeck can load" in d["reason"]


def test_the_integrity_panel_says_semantic_is_not_in_use(demo: HermesHome, tmp_path: Path) -> None:
    from memdeck.core.overview.reader import HomeReader
    from memdeck.tui.views.integrity import integrity_facts

    _semantic(demo, str(tmp_path / "nowhere"))
    reader = HomeReader(demo, load_config(demo))
    snap = reader.read(now=demo_plan().now)
    reader.close()
    text = integrity_facts(snap, demo_plan().now).plain
    assert "semantic configured · keyword in use" in text and "retries loading the model" in text


class FakeVerified:
    """Stands for memdeck's verified model (an identity that is cached) with deterministic vectors."""

    identity = "minilm-l6-v2:" + "0" * 64 + ":maxseq256:test"
    dim = 8

    def __init__(self) -> None:
        self.calls = 0

    def encode(self, texts):
        self.calls += 1
        out = np.zeros((len(texts), 8))
        for i, t in enumerate(texts):
            out[i, hash(t) % 8] = 1.0
        return out


def _compacted_home(home: HermesHome, n: int = 4) -> None:
    from memdeck.core.sessions import hermes_schema as HS

    t0 = 1_800_000_000.0
    conn = HS.create_state_db(home.state_db)
    HS.add_session(conn, "live", started_at=t0)
    for k in range(n):
        for i in range(3):
            HS.append_message(conn, "live", "user", f"turn {k}.{i}: tabs or spaces, metric or imperial", timestamp=t0 + 100 * k + i)
        HS.compact_in_place(conn, "live", f"summary {k}", keep_head=1, keep_tail=2, now=t0 + 100 * k + 10)
    conn.close()
    store = AnchorStore(home)
    store.pin("Use metric units", probes=["metric"], session_id="live")
    store.pin("Indent with tabs", probes=["tabs"], session_id="live")


def test_a_first_semantic_history_is_bounded_newest_first_and_resumes(hermes_home: HermesHome) -> None:
    enc_mod.clear_process_cache()
    history_mod.clear_process_cache()
    _compacted_home(hermes_home)
    deckdb.connect(hermes_home).close()
    hermes_home.config_path.write_text("memlock:\n  detection: semantic\n", encoding="utf-8")
    cfg = load_config(hermes_home)
    store = AnchorStore(hermes_home, cfg)
    session = store.load_session("live")
    anchors = session.sorted_anchors()
    with StateDB(hermes_home.state_db) as db:
        events = session_events(db, "live")
        assert len(events) == 4
        enc = enc_mod.CachedEncoder(FakeVerified(), hermes_home)
        seen: list[tuple[int, int]] = []
        nothing = integrity_history(db, session, anchors, cfg, encoder=enc, home=hermes_home, budget_s=0.0)
        assert all(p.get("pending") for p in nothing)  # a budget of 0 audits none (the history worker fills it)
        first = integrity_history(db, session, anchors, cfg, encoder=enc, home=hermes_home, budget_s=1e-9,
                                  progress=lambda d, t: seen.append((d, t)))
        assert [bool(p.get("pending")) for p in first] == [True, True, True, False]  # the newest is done first
        assert all(p["score"] is None for p in first[:3]) and first[3]["score"] is not None
        assert seen == [(0, 4)]

        def stop(done: int, total: int) -> None:  # the dashboard quitting raises from its progress reporter
            if done >= 1:
                raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            integrity_history(db, session, anchors, cfg, encoder=enc, home=hermes_home, progress=stop)
    history_mod.clear_process_cache()
    with sqlite3.connect(deckdb.db_path(hermes_home)) as c:
        kept = c.execute("SELECT COUNT(*) FROM audit_verdicts").fetchone()[0]
    assert kept == 2  # each finished semantic audit was kept: the newest, then the next newest before the stop
    with StateDB(hermes_home.state_db) as db:  # a later launch resumes, and the one after costs nothing
        inner = FakeVerified()
        full = integrity_history(db, session, anchors, cfg, encoder=enc_mod.CachedEncoder(inner, hermes_home),
                                 home=hermes_home)
        assert not any(p.get("pending") for p in full) and len(full) == 4
        assert full[3]["score"] == first[3]["score"]
        history_mod.clear_process_cache()
        inner2 = FakeVerified()
        again = integrity_history(db, session, anchors, cfg, encoder=enc_mod.CachedEncoder(inner2, hermes_home),
                                  home=hermes_home)
    assert again == full and inner2.calls == 0 and inner.calls > 0


def test_embedding_model_resolves_as_sentence_transformers_resolves_it(tmp_path: Path, monkeypatch) -> None:
    """The rules of ``SentenceTransformer(name)`` (sentence-transformers 2.2-6.x), no network."""
    folder = tmp_path / "m"
    folder.mkdir()
    monkeypatch.chdir(tmp_path)
    assert enc_mod.resolve_model(str(folder), {}).folder == folder  # a folder is that folder
    assert enc_mod.resolve_model("m", {}).folder == folder  # relative to the working directory, as for MemLock
    (tmp_path / "f").write_text("x")
    assert "a file, not a model folder" in enc_mod.resolve_model("f", {}).reason
    assert "not found" in enc_mod.resolve_model("a/b/c", {}).reason  # more than one "/": a path that is absent
    assert enc_mod.resolve_model("~/models/x", {}).folder is None  # no ~ expansion (sentence-transformers has none)
    # a name is a hub id in the cache: sentence-transformers/<name>, or org/name as given
    for env, cache in (({"SENTENCE_TRANSFORMERS_HOME": str(tmp_path / "st")}, tmp_path / "st"),
                       ({"HF_HUB_CACHE": str(tmp_path / "hc")}, tmp_path / "hc"),
                       ({"HF_HOME": str(tmp_path / "hh")}, tmp_path / "hh" / "hub"),
                       ({"XDG_CACHE_HOME": str(tmp_path / "x")}, tmp_path / "x" / "huggingface" / "hub")):
        miss = enc_mod.resolve_model("all-MiniLM-L6-v2", env)
        assert miss.folder is None and miss.hub_id == "sentence-transformers/all-MiniLM-L6-v2"
        assert str(cache / "models--sentence-transformers--all-MiniLM-L6-v2") in miss.reason
        snap = cache / "models--sentence-transformers--all-MiniLM-L6-v2" / "snapshots" / "r1"
        snap.mkdir(parents=True)
        assert enc_mod.resolve_model("all-MiniLM-L6-v2", env).folder == snap  # the only snapshot
        other = snap.parent / "r2"
        other.mkdir()
        assert enc_mod.resolve_model("all-MiniLM-L6-v2", env).folder is None  # two, and no refs/main: ambiguous
        (snap.parent.parent / "refs").mkdir()
        (snap.parent.parent / "refs" / "main").write_text("r2\n")
        assert enc_mod.resolve_model("all-MiniLM-L6-v2", env).folder == other
    assert enc_mod.resolve_model("org/model", {"HF_HOME": str(tmp_path / "hh")}).hub_id == "org/model"


def test_weights_of_another_size_are_refused_without_hashing(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(b"\x00" * 10)
    chk = enc_mod.verify_weights(tmp_path)
    assert chk.ok is False and not chk.hashed and "not all-MiniLM-L6-v2's 90,868,376 B" in chk.reason
    missing = enc_mod.verify_weights(tmp_path / "nope")
    assert missing.ok is None and "cannot be read" in missing.reason


def test_fill_history_advances_a_step_at_a_time_and_says_what_is_left(hermes_home: HermesHome) -> None:
    from memdeck.core.anchors.lifecycle import audit_session, fill_history

    enc_mod.clear_process_cache()
    history_mod.clear_process_cache()
    _compacted_home(hermes_home, n=5)
    deckdb.connect(hermes_home).close()
    hermes_home.config_path.write_text("memlock:\n  detection: semantic\n", encoding="utf-8")
    cfg = load_config(hermes_home)
    store = AnchorStore(hermes_home, cfg)
    enc = enc_mod.CachedEncoder(FakeVerified(), hermes_home)
    with StateDB(hermes_home.state_db) as db:
        left = [fill_history(db, store, "live", cfg, budget_s=0.0, encoder=enc) for _ in range(6)]
        assert left == [4, 3, 2, 1, 0, 0]  # one compaction a step (budget 0 still audits one), then done
        history_mod.clear_process_cache()
        done = audit_session(db, store, "live", cfg, encoder=enc, budget_s=0.0)
        assert done.pending == 0 and len(done.history) == 5  # the audit finds every verdict the worker kept
        stand_in = _StandIn()  # a stand-in's verdicts are never kept: the count never falls (the caller stops)
        assert fill_history(db, store, "live", cfg, budget_s=0.0, encoder=stand_in) == \
            fill_history(db, store, "live", cfg, budget_s=0.0, encoder=stand_in) > 0


class _StandIn(FakeVerified):
    identity = None  # not memdeck's verified model
