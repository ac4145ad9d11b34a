"""Issue 22 #4/#5 and what the hostile homes found next to them: data that is not valid text
reaches no SQLite row, no JSON line and no ``str.encode``.

* a MemLock session file, a global pin or a pending record whose *name* is not UTF-8
  (``os.listdir`` hands it over with lone surrogates): read by no reader (``core/fsio.py``
  ``list_names``), listed with the reason where a listing shows files;
* a lone surrogate escape (``"\\ud800"``) or deep nesting in JSON memdeck did not write
  (``core/jsondata.py``): the file is unreadable, with the reason, like any invalid JSON;
* a pending record whose payload is a string, list or null, or whose fields have the wrong
  types: listed as malformed, remembered without a crash;
* a MemLock session whose ``integrity_score`` is not a number: no score.

Each test ran the old code into a traceback (``UnicodeEncodeError`` in ``history_seen``,
``RecursionError`` in ``json.loads``, ``'str' object has no attribute 'get'``,
``unhashable type: 'dict'``, ``'<=' not supported between 'int' and 'list'``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from memdeck.core import history, jsondata
from memdeck.core.anchors.model import SessionAnchors
from memdeck.core.anchors.store import AnchorStore
from memdeck.core.cli import main
from memdeck.core.home import HermesHome
from memdeck.core.memory.pending import list_pending
from tests.helpers.anchors import anchor, write_memlock_file


def _bytes_name(directory: Path, name: bytes, data: bytes) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(os.fsencode(directory) + b"/" + name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def _session(sid: str, **extra: object) -> dict:
    return {"session_id": sid, "anchors": {"k1": anchor("k1", text="Always cite the ticket.")}, **extra}


@pytest.mark.parametrize("sub", ["memlock", "memlock/persist", "pending/memory"])
def test_a_file_name_that_is_not_utf8_is_never_read(hermes_home: HermesHome, capsys, sub: str) -> None:
    write_memlock_file(hermes_home.memlock_dir, "s1", _session("s1"))
    history.observe(hermes_home)
    payload = (json.dumps(_session("s2")) if sub == "memlock" else
               json.dumps({"id": "pinx", "text": "Pinned text here", "scope": "global"}) if sub == "memlock/persist" else
               json.dumps({"id": "abcd0001", "payload": {"action": "add", "target": "memory", "content": "x"}}))
    _bytes_name(hermes_home.path / sub, b"\xff\xfe-bad.json", payload.encode())
    assert history.observe(hermes_home) == []  # the old code: UnicodeEncodeError binding the path to SQLite
    for argv in (["status", "--json"], ["anchors", "--session", "s1", "--json"], ["pending", "list", "--json"],
                 ["history", "--json"], ["pin", "Use metric units", "--session", "s1", "--json"]):
        assert main(["--home", str(hermes_home.path), *argv]) == 0, argv
        out = capsys.readouterr().out
        json.loads(out)
        assert "\\udcff" not in out and "\udcff" not in out
    if sub == "memlock":
        bad = [i for i in AnchorStore(hermes_home).list_sessions() if i.error]
        assert [(i.session_id, "not valid UTF-8" in (i.error or "")) for i in bad] == [("\\xff\\xfe-bad", True)]
    if sub == "pending/memory":
        rec = next(r for r in list_pending(hermes_home) if r.malformed)
        assert rec.id == "\\xff\\xfe-bad" and "not valid UTF-8" in rec.malformed
        assert main(["--home", str(hermes_home.path), "pending", "approve", rec.id]) == 1  # refused, never read


@pytest.mark.parametrize("where", ["session_id", "anchor text", "anchor key"])
def test_a_lone_surrogate_in_a_session_file_makes_it_unreadable_not_a_crash(hermes_home: HermesHome, capsys,
                                                                           where: str) -> None:
    history.observe(hermes_home)
    data = _session("s1")
    if where == "session_id":
        data["session_id"] = "s\ud800x"
    elif where == "anchor text":
        data["anchors"]["k1"]["text"] = "Always \udc80 cite"
    else:
        data["anchors"]["\udfff"] = anchor("\udfff")
    # MemLock without self_sha256 (0.2-0.4): nothing hashes the anchors on the way in
    (hermes_home.memlock_dir).mkdir(parents=True, exist_ok=True)
    (hermes_home.memlock_dir / "s1.json").write_text(json.dumps(data), encoding="utf-8")  # ensure_ascii: "\ud800"
    assert history.observe(hermes_home) == []
    info = AnchorStore(hermes_home).list_sessions()[0]
    assert info.error and "lone surrogate" in info.error
    for argv in (["status"], ["status", "--json"], ["history"], ["audit", "--session", "s1"], ["anchors", "--json"]):
        code = main(["--home", str(hermes_home.path), *argv])
        captured = capsys.readouterr()
        assert code in (0, 1, 2) and "Traceback" not in captured.err, (argv, captured.err)
        assert code == 0 or "lone surrogate" in captured.err, (argv, captured.err)
    assert main(["--home", str(hermes_home.path), "pin", "Use metric units", "--session", "s1"]) == 1
    assert "lone surrogate" in capsys.readouterr().err  # a write refuses the file with the reason


def test_deep_nesting_is_refused_with_a_reason(hermes_home: HermesHome, capsys) -> None:
    d = hermes_home.pending_dir
    d.mkdir(parents=True)
    (d / "abcd0001.json").write_bytes(b'{"id": "abcd0001", "payload": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
    write_memlock_file(hermes_home.memlock_dir, "s1", {**_session("s1"), "drift_log": [[[[[[[]]]]]]] * 3,
                                                       "x": json.loads("[" * 200 + "]" * 200)})
    assert main(["--home", str(hermes_home.path), "status", "--json"]) == 0  # the old code: RecursionError
    st = json.loads(capsys.readouterr().out)
    assert "nested deeper" in st["pending"][0]["malformed"]
    assert any("nested deeper" in w for w in st["anchors_warnings"])


@pytest.mark.parametrize("payload", ["add deploy notes", ["add", "memory"], None, 7,
                                     {"action": {"add": 1}, "target": ["memory"], "content": {"x": 1}},
                                     {"action": "add", "target": {"t": 1}, "content": "x"}])
def test_a_pending_payload_of_the_wrong_shape_is_listed_as_malformed(hermes_home: HermesHome, capsys, payload) -> None:
    history.observe(hermes_home)  # the record is new to the history: remember_pending reads it
    d = hermes_home.pending_dir
    d.mkdir(parents=True)
    (d / "abcd0001.json").write_text(json.dumps({"id": "abcd0001", "action": {"a": 1}, "origin": ["x"],
                                                 "summary": {"s": 1}, "created_at": "NaN", "payload": payload}))
    assert main(["--home", str(hermes_home.path), "status", "--json"]) == 0  # the old code: 'str' has no .get
    rec = json.loads(capsys.readouterr().out)["pending"][0]
    assert rec["malformed"] and rec["action"] in ("", "add") and rec["origin"] == "foreground" and rec["summary"] == ""
    assert main(["--home", str(hermes_home.path), "pending", "approve", "abcd0001"]) == 1
    assert "malformed" in capsys.readouterr().err


@pytest.mark.parametrize("value", [[1, 2], "high", {"s": 1}, float("nan"), float("inf"), True])
def test_an_integrity_score_that_is_not_a_number_is_no_score(hermes_home: HermesHome, value) -> None:
    s = SessionAnchors.from_dict({**_session("s1"), "integrity_score": value, "last_alert_at": value,
                                  "last_compaction_at": value, "last_summary_hash": value})
    assert (s.integrity_score, s.last_alert_at, s.last_compaction_at) == (None, None, None)
    assert s.last_summary_hash is None or isinstance(s.last_summary_hash, str)
    write_memlock_file(hermes_home.memlock_dir, "s1", {**_session("s1"), "integrity_score": value}
                       if not isinstance(value, float) else _session("s1"))
    # watch compares every session's score with the floor (the old code: TypeError int <= list)
    assert main(["--home", str(hermes_home.path), "watch", "--timeout", "0.2"]) == 0


def test_jsondata_loads() -> None:
    assert jsondata.loads('{"a": ["\\ud83d\\ude00"]}') == {"a": ["\U0001F600"]}  # a pair is a character
    assert jsondata.loads(b'[[[1]]]') == [[[1]]]
    for text, why in (('"\\ud800"', "lone surrogate"), ('{"\\udc80": 1}', "lone surrogate"),
                      ("[" * 65 + "]" * 65, "nested deeper"), ("[" * 5000 + "]" * 5000, "nested deeper")):
        with pytest.raises(jsondata.JSONDataError, match=why):
            jsondata.loads(text)
    assert jsondata.loads("[" * 64 + "]" * 64) is not None
    with pytest.raises(ValueError):
        jsondata.loads("{not json")


def test_state_db_text_that_is_not_utf8_is_shown_not_dropped(tmp_path: Path, capsys) -> None:
    """SQLite's decoding raised for the whole query, which showed as no sessions at all."""
    import sqlite3

    from tests.helpers.statedb import build_history

    home = tmp_path / "h"
    home.mkdir()
    build_history(home / "state.db")
    conn = sqlite3.connect(home / "state.db")
    conn.execute("UPDATE sessions SET title = CAST(x'fffe6465706c6f79' AS TEXT) || id")
    conn.commit()
    conn.close()
    assert main(["--home", str(home), "sessions", "--json"]) == 0
    sessions = json.loads(capsys.readouterr().out)["sessions"]
    assert len(sessions) == 4 and all(s["title"].startswith("\ufffd\ufffddeploy") for s in sessions)
