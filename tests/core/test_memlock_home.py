"""MemLock 0.5 on Hermes' default profile (issue 29, part 1).

MemLock >= 0.5 keeps its state in ``$HERMES_HOME/memlock``, else ``$MEMLOCK_HOME/memlock``, else
``~/.memlock/memlock`` (``memlock_core/store.py`` ``_home_dir``, ``memlock_core/persistence.py``
``_persist_dir``); plain ``hermes`` on the default profile leaves ``HERMES_HOME`` unset, so that
MemLock writes ``~/.memlock/memlock/<sid>.json`` and ``~/.memlock/memlock/persist/``. memdeck must
find the anchors there, say which directory it uses and why, warn when two places hold files for
the home, and write where MemLock reads. MemLock is not on PyPI (it is a directory plugin cloned
from its repository), so these homes are laid out as its 0.5 source writes them (the demo home's
real MemLock-shaped files, moved where MemLock 0.5 puts them).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from memdeck.core.anchors.store import AnchorStore
from memdeck.core.config import load_config
from memdeck.core.home import HermesHome, resolve_home
from memdeck.core.memlock_home import candidate_dirs, locate_memlock
from memdeck.core.overview.reader import HomeReader
from memdeck.core.overview.status import build_status
from memdeck.core.watcher import source_of
from tests.helpers.demo import demo_home_template  # noqa: F401

pytestmark = pytest.mark.usefixtures("_plain_env")


@pytest.fixture
def _plain_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment of plain ``hermes`` on the default profile: neither variable set."""
    monkeypatch.delenv("HERMES_HOME", raising=False)
    monkeypatch.delenv("MEMLOCK_HOME", raising=False)


def _default_home(template: HermesHome) -> HermesHome:
    """The demo home copied to ``~/.hermes`` (the default profile of the test's HOME)."""
    dest = Path.home() / ".hermes"
    shutil.copytree(template.path, dest, symlinks=True)
    home = resolve_home(None, env={})
    assert home.path == dest and home.profile == "default"
    return home


def _move_memlock(home: HermesHome, to: Path) -> None:
    to.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(home.path / "memlock"), str(to))


def _anchors(status: dict) -> list[tuple[str, str]]:
    return sorted((a["id"], a["state"]) for a in status["anchors"])


def test_memlock_05_on_the_default_profile_shows_its_anchors_and_score(demo_home_template) -> None:  # noqa: F811
    """The same MemLock state, in the Hermes home and where MemLock 0.5 puts it on the default
    profile: the same anchors, states and score; the location says ~/.memlock and why."""
    home = _default_home(demo_home_template)
    before = build_status(home)
    assert before["anchors"] and before["integrity"]["score"] is not None  # the test is not vacuous
    assert before["memlock_location"]["rule"] == "hermes_home"
    _move_memlock(home, Path.home() / ".memlock" / "memlock")
    after = build_status(home)
    assert _anchors(after) == _anchors(before)
    assert after["integrity"] == before["integrity"]
    loc = after["memlock_location"]
    assert loc["path"] == str(Path.home() / ".memlock" / "memlock") and loc["rule"] == "user_home"
    assert "HERMES_HOME unset" in loc["reason"] and loc["warning"] is None
    # on screen: the Integrity panel's health block names the directory and the reason
    from memdeck.tui.views.integrity import hermes_health

    reader = HomeReader(home, load_config(home))
    try:
        snap = reader.read()
    finally:
        reader.close()
    assert snap.session_anchors is not None and snap.session_anchors.anchors
    text = hermes_health(snap).plain
    assert str(Path.home() / ".memlock" / "memlock") in text and "HERMES_HOME unset" in text


def test_memlock_home_is_honoured(demo_home_template, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:  # noqa: F811
    home = _default_home(demo_home_template)
    mh = tmp_path / "mlhome"
    monkeypatch.setenv("MEMLOCK_HOME", str(mh))
    _move_memlock(home, mh / "memlock")
    loc = locate_memlock(home)
    assert loc.path == mh / "memlock" and loc.rule == "memlock_home" and "MEMLOCK_HOME" in loc.reason
    assert build_status(home)["anchors"]
    # ~/.memlock is not a place once MEMLOCK_HOME is set (MemLock never looks there then)
    assert [r for _d, r in candidate_dirs(home)] == ["hermes_home", "memlock_home"]


def test_a_named_profile_only_has_its_own_memlock_dir(tmp_path: Path) -> None:
    """Hermes always sets HERMES_HOME for a named profile (and any home reached through it): MemLock
    0.5 then writes the home's own memlock/, whatever is in ~/.memlock."""
    prof = Path.home() / ".hermes" / "profiles" / "coder"
    (prof / "memories").mkdir(parents=True)
    (Path.home() / ".memlock" / "memlock").mkdir(parents=True)
    (Path.home() / ".memlock" / "memlock" / "x.json").write_text('{"session_id": "x", "anchors": {}}')
    home = HermesHome(prof, "coder")
    assert [r for _d, r in candidate_dirs(home)] == ["hermes_home"]
    assert locate_memlock(home).path == prof / "memlock"


def test_both_places_hold_files_warns_and_uses_the_one_written_last(demo_home_template) -> None:  # noqa: F811
    home = _default_home(demo_home_template)
    alt = Path.home() / ".memlock" / "memlock"
    shutil.copytree(home.path / "memlock", alt)
    old = 1_700_000_000
    for p in (home.path / "memlock").rglob("*.json"):
        os.utime(p, (old, old))
    loc = locate_memlock(home)
    assert loc.path == alt and loc.warning is not None
    assert "two places" in loc.warning and "~/.hermes/memlock" in loc.warning and "~/.memlock/memlock" in loc.warning
    st = build_status(home)
    assert st["memlock_location"]["warning"] == loc.warning and loc.warning in st["anchors_warnings"]
    # the gateway (HERMES_HOME set) writes the home's memlock/ later: it becomes the one in use
    for p in (home.path / "memlock").rglob("*.json"):
        os.utime(p, None)
    for p in alt.rglob("*.json"):
        os.utime(p, (old, old))
    assert locate_memlock(home).path == home.path / "memlock" and locate_memlock(home).warning


def test_writes_land_where_memlock_reads(demo_home_template) -> None:  # noqa: F811
    """pin, edit, archive and unpin on the default profile go to ~/.memlock/memlock (session file
    and persist/ + manifest), and nothing appears in the Hermes home's memlock/."""
    from memdeck.core.anchors.files import safe_sid

    home = _default_home(demo_home_template)
    alt = Path.home() / ".memlock" / "memlock"
    _move_memlock(home, alt)
    store = AnchorStore(home, load_config(home), actor="cli")
    assert store.root == alt
    sid = store.list_sessions()[0].session_id
    session_file = alt / f"{safe_sid(sid)}.json"
    aid = store.pin("Always answer in French", scope="global", session_id=sid).id
    assert aid in json.loads(session_file.read_text(encoding="utf-8"))["anchors"]
    assert (alt / "persist" / f"{aid}.json").exists()
    manifest = json.loads((alt / "persist" / "manifest.json").read_text(encoding="utf-8"))
    assert aid in manifest["pins"]
    store.update(aid, text="Always answer in French, even in code comments", session_id=sid)
    assert "code comments" in json.loads(session_file.read_text(encoding="utf-8"))["anchors"][aid]["text"]
    other = store.pin("Use metric units", session_id=sid).id
    store.archive(other, sid)
    assert other not in json.loads(session_file.read_text(encoding="utf-8"))["anchors"]
    store.unpin(aid, session_id=sid, scope="global")
    data = json.loads((alt / f"{safe_sid(sid)}.json").read_text(encoding="utf-8"))
    assert aid not in data["anchors"] and not (alt / "persist" / f"{aid}.json").exists()
    assert not (home.path / "memlock").exists()


def test_with_no_files_the_installed_memlock_decides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home_dir = Path.home() / ".hermes"
    (home_dir / "memories").mkdir(parents=True)
    home = resolve_home(None, env={})
    assert locate_memlock(home).path == home_dir / "memlock"  # nothing installed: the home's own
    plugin = home_dir / "plugins" / "memlock"
    (plugin / "memlock_core").mkdir(parents=True)
    (plugin / "plugin.yaml").write_text('name: memlock\nversion: "0.5.1"\n')
    loc = locate_memlock(home)
    assert loc.path == Path.home() / ".memlock" / "memlock" and loc.installed == "MemLock 0.5.1 (memlock_core)"
    monkeypatch.setenv("HERMES_HOME", str(home_dir))  # the user's shell exports HERMES_HOME
    assert locate_memlock(home).path == home_dir / "memlock"
    shutil.rmtree(plugin / "memlock_core")  # 0.2-0.4: the Hermes home, always
    monkeypatch.delenv("HERMES_HOME")
    assert locate_memlock(home).path == home_dir / "memlock"


def test_the_watcher_sees_memlock_files_outside_the_home() -> None:
    home_dir = Path.home() / ".hermes"
    (home_dir / "memories").mkdir(parents=True)
    home = resolve_home(None, env={})
    alt = Path.home() / ".memlock" / "memlock"
    assert source_of(home, alt / "20260701_101010_aa.json") == "memlock"
    assert source_of(home, alt / "persist" / "pin_1.json") == "memlock"
    assert source_of(home, alt / "x.json.tmp") is None
    assert source_of(home, alt) == "memlock" and source_of(home, alt.parent) == "memlock"
    assert source_of(home, Path.home() / ".bashrc") is None


def test_memlock_home_in_the_homes_env_file_wins_as_hermes_loads_it(demo_home_template, monkeypatch: pytest.MonkeyPatch,  # noqa: F811
                                                                    tmp_path: Path) -> None:
    """Issue 37.8: Hermes loads ``~/.hermes/.env`` with override, so MemLock 0.5 inside it writes
    ``$MEMLOCK_HOME/memlock`` of the ``.env`` even when the shell exports another (or none)."""
    home = _default_home(demo_home_template)
    mh = tmp_path / "from env file"
    (home.path / ".env").write_text(f'OPENAI_API_KEY=sk-x\nexport MEMLOCK_HOME="{mh}"  # MemLock state\n',
                                    encoding="utf-8")
    _move_memlock(home, mh / "memlock")
    for shell in (None, str(tmp_path / "stale shell value")):
        if shell is None:
            monkeypatch.delenv("MEMLOCK_HOME", raising=False)
        else:
            monkeypatch.setenv("MEMLOCK_HOME", shell)
        loc = locate_memlock(home)
        assert loc.path == mh / "memlock" and loc.rule == "memlock_home", (shell, loc)
        assert build_status(home)["anchors"], shell
