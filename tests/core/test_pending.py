"""Pending writes: listing (malformed included), scanning, approve (Hermes replay), reject."""

from __future__ import annotations

import json

import pytest

from memdeck.core.config import Config
from memdeck.core.deck import journal
from memdeck.core.errors import Refused
from memdeck.core.home import HermesHome
from memdeck.core.memory.pending import approve, list_pending, reject
from memdeck.core.memory.store import MemoryStore
from tests.helpers.memory import HOSTILE


def stage(home: HermesHome, pid: str, payload: dict, created: float = 1.0, origin: str = "background_review") -> None:
    d = home.pending_dir
    d.mkdir(parents=True, exist_ok=True)
    rec = {"id": pid, "subsystem": "memory", "action": payload.get("action"), "summary": "s", "origin": origin,
           "created_at": created, "payload": payload}
    (d / f"{pid}.json").write_text(json.dumps(rec))


def mem(home: HermesHome, target: str = "memory") -> str:
    p = home.memory_file(target)
    return p.read_text() if p.exists() else ""


def test_list_scans_and_reports_malformed(hermes_home: HermesHome) -> None:
    stage(hermes_home, "aaaa0001", {"action": "add", "target": "user", "content": "Likes tea"}, created=2)
    stage(hermes_home, "aaaa0002", {"action": "add", "target": "memory", "content": HOSTILE["hermes_env"]}, created=1)
    stage(hermes_home, "aaaa0003", {"action": "frob"}, created=3)
    (hermes_home.pending_dir / "broken.json").write_text("{not json")
    recs = {r.id: r for r in list_pending(hermes_home)}
    assert [r.id for r in list_pending(hermes_home)][:3] == ["broken", "aaaa0002", "aaaa0001"]
    assert recs["aaaa0002"].threats == ("hermes_env",) and recs["aaaa0001"].threats == ()
    assert recs["aaaa0001"].target == "user" and recs["aaaa0001"].origin == "background_review"
    assert recs["broken"].malformed and "JSON" in recs["broken"].malformed
    assert recs["aaaa0003"].malformed and "frob" in recs["aaaa0003"].malformed


def test_list_of_missing_dir_is_empty(hermes_home: HermesHome) -> None:
    assert list_pending(hermes_home) == []


def test_approve_applies_and_removes_record(hermes_home: HermesHome) -> None:
    stage(hermes_home, "bbbb0001", {"action": "add", "target": "user", "content": "Likes tea", "old_text": None})
    r = approve(hermes_home, Config(), "bbbb0001")
    assert mem(hermes_home, "user") == "Likes tea" and not list_pending(hermes_home)
    assert journal.entries(hermes_home)[0].detail["pending_id"] == "bbbb0001" and r.op == "add"


def test_approve_batch_uses_hermes_substring_rule(hermes_home: HermesHome) -> None:
    s = MemoryStore(hermes_home, Config())
    s.add("memory", "alpha one")
    s.add("memory", "beta two")
    stage(hermes_home, "bbbb0002", {"action": "batch", "target": "memory", "operations": [
        {"action": "replace", "old_text": "alpha", "content": "alpha 1"}, {"action": "remove", "old_text": "beta"}]})
    approve(hermes_home, Config(), "bbbb0002")
    assert mem(hermes_home) == "alpha 1"


def test_refused_approve_keeps_record_and_file(hermes_home: HermesHome) -> None:
    stage(hermes_home, "cccc0001", {"action": "add", "target": "memory", "content": HOSTILE["ssh_backdoor"]})
    stage(hermes_home, "cccc0002", {"action": "remove", "target": "memory", "old_text": "nothing"})
    for pid, code in (("cccc0001", "threat"), ("cccc0002", "no_match")):
        with pytest.raises(Refused) as ei:
            approve(hermes_home, Config(), pid)
        assert ei.value.code == code
    assert {r.id for r in list_pending(hermes_home)} == {"cccc0001", "cccc0002"}
    assert not hermes_home.memory_file("memory").exists()


def test_reject_removes_and_journals(hermes_home: HermesHome) -> None:
    stage(hermes_home, "dddd0001", {"action": "add", "target": "user", "content": "x"})
    out = reject(hermes_home, "dddd0001")
    assert out["id"] == "dddd0001" and not list_pending(hermes_home)
    row = journal.entries(hermes_home)[0]
    assert row.op == "reject" and row.target == "user" and "dddd0001" in row.detail["record"]
    with pytest.raises(Refused) as ei:
        reject(hermes_home, "dddd0001")
    assert ei.value.code == "not_found"
    with pytest.raises(Refused) as ei:
        reject(hermes_home, "../etc/passwd")
    assert ei.value.code == "invalid"


def test_malformed_record_cannot_be_approved(hermes_home: HermesHome) -> None:
    stage(hermes_home, "eeee0001", {"action": "add", "target": "nowhere", "content": "x"})
    with pytest.raises(Refused) as ei:
        approve(hermes_home, Config(), "eeee0001")
    assert ei.value.code == "malformed" and list_pending(hermes_home)


def test_a_record_being_handled_elsewhere_is_not_replayed_twice(hermes_home: HermesHome) -> None:
    """Two reviewers (two memdeck windows, or CLI + TUI) approve the same record at once."""
    import fcntl
    import os

    stage(hermes_home, "cccc0001", {"action": "batch", "target": "memory", "operations": [
        {"action": "add", "content": "X marks the spot"}, {"action": "replace", "old_text": "X marks", "content": "Y marks the spot"}]})
    path = hermes_home.pending_dir / "cccc0001.json"
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # the other reviewer is mid-approve
        for act in (lambda: approve(hermes_home, Config(), "cccc0001"), lambda: reject(hermes_home, "cccc0001")):
            with pytest.raises(Refused) as ei:
                act()
            assert ei.value.code == "busy"
        assert mem(hermes_home) == "" and path.exists()
        # the other reviewer finishes: replays, then removes the record
        MemoryStore(hermes_home, Config()).add("memory", "Y marks the spot")
        path.unlink()
    finally:
        os.close(fd)
    with pytest.raises(Refused) as ei:
        approve(hermes_home, Config(), "cccc0001")
    assert ei.value.code in ("not_found", "invalid")
    assert mem(hermes_home) == "Y marks the spot"  # replayed once, not twice


def test_undoing_an_approval_stages_the_write_again(hermes_home: HermesHome) -> None:
    """Issue 8 #9: undo of an approval reverts the file and puts the pending record back."""
    from memdeck.core.undo import undo

    MemoryStore(hermes_home, Config(), actor="test").add("memory", "keep this")
    stage(hermes_home, "bbbb0001", {"action": "add", "target": "memory", "content": "Deploys go through CI"})
    staged = (hermes_home.pending_dir / "bbbb0001.json").read_bytes()
    approve(hermes_home, Config(), "bbbb0001")
    assert mem(hermes_home) == "keep this\n§\nDeploys go through CI"
    assert not (hermes_home.pending_dir / "bbbb0001.json").exists()
    res = undo(hermes_home, Config(), actor="test")
    assert mem(hermes_home) == "keep this"
    assert (hermes_home.pending_dir / "bbbb0001.json").read_bytes() == staged
    assert "staged again" in res.message
    assert [r.id for r in list_pending(hermes_home)] == ["bbbb0001"]


def test_an_approval_interrupted_before_its_record_was_removed_is_not_replayed(hermes_home: HermesHome, monkeypatch) -> None:
    """Issue 13 #8 / issue 22: the write landed (and its journal row), the record was not removed
    (the process died first): it is set aside, so no reviewer finds it, and the next recovery
    removes it. A record of the same bytes left under its own name (as memdeck before issue 22
    left it) is never applied again either: approving it removes it."""
    from memdeck.core.memory.approval import RecordClaim
    from memdeck.core.memory.store import recover_intents

    MemoryStore(hermes_home, Config(), actor="test").add("memory", "Deploy on Fridays")
    MemoryStore(hermes_home, Config(), actor="test").add("memory", "Deploy previews on Mondays")
    stage(hermes_home, "cccc0001", {"action": "remove", "target": "memory", "old_text": "Deploy on Fridays"})
    staged = (hermes_home.pending_dir / "cccc0001.json").read_bytes()
    monkeypatch.setattr(RecordClaim, "release", lambda self: None)  # killed before the removal
    approve(hermes_home, Config(), "cccc0001")
    monkeypatch.undo()
    after = mem(hermes_home)
    aside = hermes_home.pending_dir / "cccc0001.json.applying"
    assert after == "Deploy previews on Mondays" and aside.read_bytes() == staged
    assert list_pending(hermes_home) == []  # neither memdeck nor Hermes (``*.json``) lists it
    with pytest.raises(Refused) as exc:
        approve(hermes_home, Config(), "cccc0001")
    assert exc.value.code == "not_found"
    recover_intents(hermes_home, Config())
    assert not aside.exists() and mem(hermes_home) == after
    (hermes_home.pending_dir / "cccc0001.json").write_bytes(staged)  # the pre-issue-22 leftover
    with pytest.raises(Refused) as exc:
        approve(hermes_home, Config(), "cccc0001")
    assert exc.value.code == "already_applied" and "journal #" in exc.value.reason
    assert mem(hermes_home) == after and not (hermes_home.pending_dir / "cccc0001.json").exists()


def test_a_record_that_could_not_be_removed_is_not_applied(hermes_home: HermesHome, monkeypatch) -> None:
    """Issue 13 #7: a read-only pending/memory/ would leave an applied record behind to be
    replayed; the approval is refused before anything is written (os.access stands in for the
    read-only directory: as root every directory is writable)."""
    from memdeck.core.memory import pending as pending_mod

    stage(hermes_home, "cccc0002", {"action": "add", "target": "memory", "content": "Use uv"})
    real = pending_mod.os.access
    monkeypatch.setattr(pending_mod.os, "access", lambda p, mode: False if mode == pending_mod.os.W_OK else real(p, mode))
    with pytest.raises(Refused) as exc:
        approve(hermes_home, Config(), "cccc0002")
    assert exc.value.code == "unwritable" and "nothing was applied" in exc.value.reason
    assert mem(hermes_home) == "" and (hermes_home.pending_dir / "cccc0002.json").exists()


def test_a_really_read_only_pending_dir_refuses_before_applying(hermes_home: HermesHome) -> None:
    """Issue 13 #7 on a real read-only ``pending/memory/``: a read-only bind mount in a user
    namespace when running as root (root writes through any mode bits), chmod 0555 otherwise.
    Nothing is applied, the record stays, the refusal says why; skipped with the reason when the
    machine allows neither."""
    import os
    import shutil
    import subprocess
    import sys

    MemoryStore(hermes_home, Config(), actor="test").add("memory", "keep this")
    stage(hermes_home, "dddd0005", {"action": "add", "target": "memory", "content": "Deploys go through CI"})
    before = mem(hermes_home)
    d = hermes_home.pending_dir
    code = ("import sys\nfrom pathlib import Path\nfrom memdeck.core.memory.pending import approve\n"
            "from memdeck.core.home import HermesHome\nfrom memdeck.core.config import Config\n"
            "from memdeck.core.errors import Refused\n"
            "try:\n    approve(HermesHome(Path(sys.argv[1])), Config(), 'dddd0005')\n"
            "except Refused as e:\n    print('REFUSED', e.code, e)\n    sys.exit(2)\n")
    if os.geteuid() != 0:
        d.chmod(0o555)
        try:
            proc = subprocess.run([sys.executable, "-c", code, str(hermes_home.path)], capture_output=True, text=True,
                                  timeout=60)
        finally:
            d.chmod(0o755)
    else:
        if not shutil.which("unshare"):
            pytest.skip("running as root without unshare: cannot make pending/memory read-only")
        probe = subprocess.run(["unshare", "-rm", "sh", "-c", f"mount --bind -o ro '{d}' '{d}'"], capture_output=True)
        if probe.returncode != 0:
            pytest.skip(f"cannot bind-mount read-only here: {probe.stderr.decode(errors='replace').strip()}")
        script = 'mount --bind -o ro "$1" "$1" && exec "$2" -c "$3" "$4"'
        proc = subprocess.run(["unshare", "-rm", "sh", "-c", script, "sh", str(d), sys.executable, code,
                               str(hermes_home.path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "REFUSED unwritable" in proc.stdout and "nothing was applied" in proc.stdout
    assert "Traceback" not in proc.stderr, proc.stderr
    assert mem(hermes_home) == before
    assert (d / "dddd0005.json").exists()
