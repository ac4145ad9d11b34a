"""One core operation for an anchor edit (CLI and TUI alike), and global pins without a session."""

from __future__ import annotations

import json

import pytest

from memdeck.core.anchors.rules import auto_reminder, derive_probes
from memdeck.core.anchors.store import AnchorStore
from memdeck.core.cli import main
from memdeck.core.config import Config
from memdeck.core.home import HermesHome
from memdeck.core.undo import undo


@pytest.fixture
def store(hermes_home: HermesHome) -> AnchorStore:
    return AnchorStore(hermes_home, Config(), actor="test")


def test_an_edit_form_passing_back_the_automatic_reminder_and_probes_gets_new_ones(store: AnchorStore) -> None:
    a = store.pin("Always answer in French. Even for code comments", session_id="s1")
    assert a.reminder == auto_reminder(a.text) and a.probes == derive_probes(a.text)
    # the TUI's form is prefilled with the old reminder and probes and sends them back unchanged
    b = store.update(a.id, text="Reply in German from now on", reminder=a.reminder, probes=list(a.probes),
                     priority=a.priority, session_id="s1")
    assert b.reminder == "Reply in German from now on"
    assert b.probes == derive_probes("Reply in German from now on")
    assert "french" not in b.probes


def test_a_custom_reminder_and_custom_probes_survive_a_text_edit(store: AnchorStore) -> None:
    a = store.pin("Always answer in French", reminder="Speak French!", probes=["french", "francais"], session_id="s1")
    b = store.update(a.id, text="Always answer in French, also in code", reminder=a.reminder, probes=list(a.probes),
                     session_id="s1")
    assert b.reminder == "Speak French!" and b.probes == ["french", "francais"]


def test_a_global_pin_needs_no_session(hermes_home: HermesHome, capsys) -> None:
    assert not hermes_home.memlock_dir.exists()
    assert main(["--home", str(hermes_home.path), "pin", "Never push to main without review", "--scope", "global",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    aid = out["anchor"]["id"]
    assert out["session_id"] is None and out["scope"] == "global"
    store = AnchorStore(hermes_home, Config())
    assert store.get_pin(aid)["text"] == "Never push to main without review"
    assert list(hermes_home.memlock_dir.glob("*.json")) == []  # no session file was invented
    undo(hermes_home, Config(), actor="test")
    assert store.get_pin(aid) is None


def test_a_session_pin_without_a_session_is_still_refused(hermes_home: HermesHome, capsys) -> None:
    assert main(["--home", str(hermes_home.path), "pin", "Use tabs"]) == 2
    assert "no session" in capsys.readouterr().err
