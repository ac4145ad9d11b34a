"""Issue 13 #6: nothing the CLI prints can drive the terminal: plain output shows hidden
characters as markers, --json escapes C1, bidi and invisible characters as \\u escapes."""

from __future__ import annotations

import json

from memdeck.core.cli import main
from memdeck.core.home import HermesHome
from memdeck.core.sessions import hermes_schema as hs

HOSTILE = "ev\x1b]52;c;Y3VybA==\x07il\x9b31m\u202eid\u2066\x85"
RAW = {"\x1b", "\x07", "\x9b", "\u202e", "\u2066", "\x85"}


def _stage(home: HermesHome) -> None:
    home.pending_dir.mkdir(parents=True, exist_ok=True)
    rec = {"id": "abcd0001", "subsystem": "memory", "action": "add" + HOSTILE, "origin": HOSTILE,
           "summary": HOSTILE, "created_at": 1.0, "payload": {"action": "add", "target": "memory", "content": "ok"}}
    (home.pending_dir / "abcd0001.json").write_text(json.dumps(rec), encoding="utf-8")


def test_plain_and_json_output_carry_no_raw_control_or_bidi_characters(hermes_home: HermesHome, capsys) -> None:
    _stage(hermes_home)
    conn = hs.create_state_db(hermes_home.state_db)
    hs.add_session(conn, "s" + HOSTILE, title=HOSTILE, started_at=1.0)
    hs.append_message(conn, "s" + HOSTILE, "user", "hello " + HOSTILE, timestamp=2.0)
    conn.close()
    h = ["--home", str(hermes_home.path)]
    for argv in (["status"], ["status", "--json"], ["pending", "list"], ["sessions"], ["sessions", "--json"],
                 ["recall", "hello"], ["recall", "hello", "--json"]):
        capsys.readouterr()
        main([*h, *argv])
        cap = capsys.readouterr()
        for stream in (cap.out, cap.err):
            assert not RAW & set(stream), (argv, [c for c in stream if c in RAW])
        if "--json" in argv:
            json.loads(cap.out)  # still valid JSON, the escapes decode back
    capsys.readouterr()
    main([*h, "sessions", "--json"])
    assert any(s["id"] == "s" + HOSTILE for s in json.loads(capsys.readouterr().out)["sessions"])
