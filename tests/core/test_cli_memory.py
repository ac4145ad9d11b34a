"""The memory CLI: exit codes 0/1/2, messages on stderr, JSON output."""

from __future__ import annotations

import json

import pytest

from memdeck.core.cli import main
from memdeck.core.home import HermesHome
from memdeck.core.memory.entries import entry_id
from tests.helpers.memory import HOSTILE, write_raw


def run(home: HermesHome, *argv: str) -> int:
    return main(["--home", str(home.path), *argv])


def test_add_list_status_json(hermes_home: HermesHome, capsys) -> None:
    assert run(hermes_home, "memory", "add", "--target", "memory", "First fact") == 0
    assert "Entry added." in capsys.readouterr().out
    assert run(hermes_home, "status", "--json") == 0
    st = json.loads(capsys.readouterr().out)
    assert st["memory"]["memory"]["entries"][0]["id"] == entry_id("First fact")
    assert run(hermes_home, "status") == 0
    out = capsys.readouterr().out
    assert "MEMORY.md: 10/2,200 chars" in out and entry_id("First fact") in out


def test_refusals_exit_1_with_reason_on_stderr(hermes_home: HermesHome, capsys) -> None:
    assert run(hermes_home, "memory", "add", "--target", "user", HOSTILE["prompt_injection"]) == 1
    err = capsys.readouterr().err
    assert "refused" in err and "prompt_injection" in err
    assert not hermes_home.memory_file("user").exists()


def test_overflow_lists_entries_with_ids_and_sizes(hermes_home: HermesHome, capsys) -> None:
    (hermes_home.path / "config.yaml").write_text("memory:\n  user_char_limit: 30\n")
    assert run(hermes_home, "memory", "add", "--target", "user", "a" * 20) == 0
    capsys.readouterr()
    assert run(hermes_home, "memory", "add", "--target", "user", "b" * 20) == 1
    err = capsys.readouterr().err
    assert "20/30" in err and entry_id("a" * 20) in err and "20 chars" in err


def test_usage_errors_exit_2(hermes_home: HermesHome, capsys) -> None:
    with pytest.raises(SystemExit) as ei:
        run(hermes_home, "memory", "add", "--target", "nowhere", "x")
    assert ei.value.code == 2
    assert run(hermes_home, "restore", "abc") == 2
    assert run(hermes_home, "archive") == 2


def test_archive_restore_undo_journal_and_escaping(hermes_home: HermesHome, capsys) -> None:
    write_raw(hermes_home, "memory", "plain\n§\nbell\x07 and \x1b[31mred")
    assert run(hermes_home, "archive", "plain", "--json") == 0
    aid = json.loads(capsys.readouterr().out)["archive_id"]
    assert run(hermes_home, "archive", "--list") == 0
    assert "plain" in capsys.readouterr().out
    assert run(hermes_home, "restore", str(aid)) == 0
    assert run(hermes_home, "undo") == 0
    capsys.readouterr()
    assert run(hermes_home, "journal") == 0
    out = capsys.readouterr().out
    assert "restore" in out and "undone by" in out
    assert run(hermes_home, "memory", "list") == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "<U+001B>" in out and "<U+0007>" in out


def test_pending_and_scan_commands(hermes_home: HermesHome, capsys) -> None:
    d = hermes_home.pending_dir
    d.mkdir(parents=True)
    (d / "abcd0001.json").write_text(json.dumps({"id": "abcd0001", "payload": {"action": "add", "target": "user", "content": "Likes tea"}}))
    (d / "abcd0002.json").write_text(json.dumps({"id": "abcd0002", "payload": {"action": "add", "content": HOSTILE["c2_explicit"]}}))
    assert run(hermes_home, "pending", "list") == 0
    out = capsys.readouterr().out
    assert "abcd0001" in out and "c2_explicit" in out
    assert run(hermes_home, "scan") == 3  # issue 22 #11: flagged items exit 3, so a script can tell
    assert "[pending] abcd0002" in capsys.readouterr().out
    assert run(hermes_home, "scan", "--json") == 3
    assert json.loads(capsys.readouterr().out)["flagged"] == 1
    assert run(hermes_home, "pending", "approve", "abcd0002") == 1
    assert run(hermes_home, "pending", "approve", "abcd0001") == 0
    assert run(hermes_home, "pending", "reject", "abcd0002") == 0
    assert hermes_home.memory_file("user").read_text() == "Likes tea" and not list(d.glob("*.json"))
    assert run(hermes_home, "scan") == 0  # clean
    assert "no threats found" in capsys.readouterr().out


def test_edit_move_normalize(hermes_home: HermesHome, capsys) -> None:
    write_raw(hermes_home, "memory", "one\n\n§\ntwo")
    assert run(hermes_home, "memory", "edit", entry_id("one"), "uno") == 1  # drift guard
    assert run(hermes_home, "memory", "normalize", "--target", "memory") == 0
    assert run(hermes_home, "memory", "edit", entry_id("one"), "uno") == 0
    assert run(hermes_home, "memory", "move", entry_id("two")[:5], "--to", "user") == 0
    assert hermes_home.memory_file("user").read_text() == "two"
    assert hermes_home.memory_file("memory").read_text() == "uno"


def test_memory_list_says_why_a_file_is_unreadable(tmp_path, capsys) -> None:
    from memdeck.core.cli import main

    mem = tmp_path / "h" / "memories"
    mem.mkdir(parents=True)
    (mem / "MEMORY.md").write_bytes(b"ok entry\n\xc2\xa7\n\xff\xfe bad")
    assert main(["--home", str(tmp_path / "h"), "memory", "list"]) == 0
    out = capsys.readouterr().out
    assert "unreadable" in out and "not valid UTF-8" in out


def test_status_summarises_the_live_session_integrity_and_anchors(tmp_path, capsys) -> None:
    from memdeck.core.cli import main
    from memdeck.core.demo import build_demo_home

    home = build_demo_home(tmp_path / "demo")
    assert main(["--home", str(home.path), "status"]) == 0
    out = capsys.readouterr().out
    assert "live session: " in out and "2 compactions" in out
    assert "integrity: 50%" in out and "67 → 50" in out
    assert "3 alive" in out and "2 drifted" in out and "1 rehydrated" in out


def test_status_says_when_state_db_is_missing(tmp_path, capsys) -> None:
    from memdeck.core.cli import main

    (tmp_path / "h" / "memories").mkdir(parents=True)
    assert main(["--home", str(tmp_path / "h"), "status"]) == 0
    assert "state.db: missing" in capsys.readouterr().out


def test_plain_status_lists_at_most_the_listed_entries_and_counts_the_rest(hermes_home: HermesHome, capsys) -> None:
    from memdeck.core.memory.reader import LISTED_ENTRIES

    n = LISTED_ENTRIES + 37
    write_raw(hermes_home, "memory", "\n§\n".join(f"fact number {i}" for i in range(n)))
    assert run(hermes_home, "status") == 0
    out = capsys.readouterr().out
    assert f"fact number {LISTED_ENTRIES - 1}" in out and f"fact number {LISTED_ENTRIES}\n" not in out
    assert "… 37 more entries" in out and "memdeck memory list --target memory" in out
    assert run(hermes_home, "memory", "list") == 0  # the list command still lists every entry
    assert f"fact number {n - 1}" in capsys.readouterr().out
