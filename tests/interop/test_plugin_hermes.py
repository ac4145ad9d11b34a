"""memdeck's plugin loaded by the real hermes-agent 0.19.0 PluginManager (directory + entry point)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memdeck.core.home import HermesHome
from memdeck.core.plugin.install import install_plugin
from tests.conftest import requires_hermes
from tests.helpers.plugin import BRITISH, BULLETS, REPO, run_py, seed, write_config

pytestmark = [requires_hermes, pytest.mark.interop]

SID = "20260701_101010_feed01"

# Runs inside a fresh interpreter with HERMES_HOME set: discover through Hermes, then drive the
# hooks, the tool and the command exactly as Hermes calls them.
DRIVER = r"""
import json, sys
from hermes_cli.plugins import PluginManager
from agent.context_compressor import SUMMARY_PREFIX
MODE = sys.argv[1]
SID = sys.argv[2]
pm = PluginManager()
if MODE == "dir":
    pm._scan_entry_points = lambda: []   # the venv also declares the entry point; isolate the dir form
pm.discover_and_load()
lp = pm._plugins["memdeck"]
out = {"enabled": lp.enabled, "error": lp.error, "source": lp.manifest.source,
       "module": lp.module.__name__ if lp.module else None,
       "hooks": sorted(lp.hooks_registered), "tools": sorted(lp.tools_registered),
       "commands": sorted(lp.commands_registered),
       "core_imported": sorted(m for m in sys.modules if m == "memdeck.core" or m.startswith("memdeck.core."))}
def turn(history, user):
    return pm.invoke_hook("pre_llm_call", session_id=SID, task_id="t", turn_id="x", user_message=user,
                          conversation_history=history, is_first_turn=False, model="m", platform="cli", sender_id="")
pm.invoke_hook("on_session_start", session_id=SID, model="m", platform="cli")
sysmsg = {"role": "system", "content": "You are Hermes."}
quiet = [sysmsg, {"role": "user", "content": "hello"}]
out["quiet"] = turn(quiet, "hello")
summary = {"role": "user", "content": SUMMARY_PREFIX + "\nWe set up the repo.\n\n"
           "--- END OF CONTEXT SUMMARY — respond to the message below, not the summary above ---"}
compacted = [sysmsg, {"role": "user", "content": "old"}, summary,
             {"role": "user", "content": "Use British English spelling everywhere, please."},
             {"role": "assistant", "content": "Of course: colour, favour."}]
out["compacted"] = turn(compacted, "next question")
out["again"] = turn(compacted + [{"role": "user", "content": "more"}], "more")
merged = {"role": "user", "content": "[PRIOR CONTEXT — for reference only; not a new message]\nold\n\n"
          "[END OF PRIOR CONTEXT — COMPACTION SUMMARY BELOW]\n\n" + SUMMARY_PREFIX + "\nSecond summary."}
out["merged"] = turn([sysmsg, merged, {"role": "user", "content": "Always reply in bullet points, never paragraphs."}], "ok")
from tools.registry import registry
out["pin"] = registry.dispatch("guard_pin", {"text": "Cite every source you use.", "priority": 70}, session_id=SID)
out["bad_priority"] = registry.dispatch("guard_pin", {"text": "x y z", "priority": "high"}, session_id=SID)
out["bad_probes"] = registry.dispatch("guard_pin", {"text": "Use tabs", "probes": "tabs"}, session_id=SID)
out["schema_props"] = sorted(registry.get_schema("guard_pin")["parameters"]["properties"])
out["toolset"] = registry.get_toolset_for_tool("guard_pin")
# issue 35: the hooks never load the memory store; /memdeck does, when it runs
out["store_after_hooks"] = sorted(m for m in sys.modules if m.endswith((".memory.store", ".memory.review", ".memory.reader")))
pm.invoke_hook("pre_gateway_dispatch", event=None, gateway=None, session_store=None)
out["store_after_hooks"] += sorted(m for m in sys.modules if m.endswith((".memory.store", ".memory.review", ".memory.reader")))
out["memdeck_help"] = pm._plugin_commands["memdeck"]["handler"]("help")
out["store_after_command"] = sorted(m for m in sys.modules if m.endswith((".memory.store", ".memory.review", ".memory.reader")))
out["guard"] = pm._plugin_commands["guard"]["handler"]("")
pm.invoke_hook("on_session_end", session_id=SID, completed=True, interrupted=False, model="m", platform="cli")
print("RESULT" + json.dumps(out))
"""


def drive(home: Path, mode: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", DRIVER, mode, SID], capture_output=True, text=True, timeout=180,
                          env={**os.environ, "HERMES_HOME": str(home), "PYTHONPATH": str(REPO)}, cwd=str(home))
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")), None)
    assert line is not None, f"driver failed rc={proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    return json.loads(line[len("RESULT"):])


def prepare(tmp_path: Path, *, install: bool) -> HermesHome:
    home = HermesHome(tmp_path / "hermes_home")
    (home.path / "memories").mkdir(parents=True)
    write_config(home, """\
        # my hermes config
        model:
          default: test/model
        memlock:
          hard_reinject_turns: 40
        """)
    seed(home, SID, BULLETS, BRITISH)
    if install:
        install_plugin(home)
    else:
        with open(home.config_path, "a", encoding="utf-8") as fh:
            fh.write("plugins:\n  enabled:\n  - memdeck\n")
    return home


def check_behaviour(out: dict, home: HermesHome) -> None:
    assert out["enabled"] is True and out["error"] is None
    assert out["hooks"] == ["on_session_end", "on_session_start", "post_api_request", "post_tool_call",
                            "pre_api_request", "pre_gateway_dispatch", "pre_llm_call", "transform_llm_output"]
    assert out["store_after_hooks"] == [] and out["store_after_command"] != []
    assert out["memdeck_help"].startswith("/memdeck - memdeck's review queue")
    assert out["tools"] == ["guard_pin"] and out["commands"] == ["guard", "memdeck"] and out["toolset"] == "guard"
    assert out["quiet"] == []
    # drifted (bullets) re-injected in MemLock's exact format; alive (British) not
    assert out["compacted"] == [{"context": "[Standing instructions — still active]\n"
                                            "  - Always reply in bullet points, never paragraphs"}]
    assert out["again"] == []
    # merge-into-tail: a new compaction; now British drifted, bullets alive
    assert out["merged"] == [{"context": "[Standing instructions — still active]\n"
                                         "  - Use British English spelling everywhere"}]
    assert out["pin"].startswith("Pinned instruction (id=pin_") and "priority=70" in out["pin"]
    assert out["pin"].endswith(":\n  Cite every source you use.\nWill survive context compaction.")
    assert out["bad_priority"].startswith("Error: priority must be an integer")
    assert out["bad_probes"].startswith("Error: probes must be an array of keywords, not a string")
    assert {"text", "unpin", "reminder", "priority", "probes", "scope", "pin_id", "action", "version"} <= set(out["schema_props"])
    g = out["guard"].split("\n")
    assert g[0] == f"MemLock — session {SID}" and g[1] == "  integrity_score: 50% (anchors: 3)"
    assert g[-1].startswith("Open the live dashboard with `memdeck`")
    data = json.loads((home.memlock_dir / f"{SID}.json").read_text(encoding="utf-8"))
    assert len(data["anchors"]) == 3 and len(data["drift_log"]) == 2
    assert data["turn_count"] == 4 and data["last_reinject_turn"] == 4


def test_directory_plugin_through_hermes_plugin_manager(tmp_path):
    home = prepare(tmp_path, install=True)
    out = drive(home.path, "dir")
    assert out["source"] == "user" and out["module"] == "hermes_plugins.memdeck"
    assert out["core_imported"] == []  # the vendored copy ran, not the installed package
    check_behaviour(out, home)


def test_entry_point_plugin_through_hermes_plugin_manager(tmp_path):
    from importlib.metadata import entry_points

    eps = [ep for ep in entry_points(group="hermes_agent.plugins") if ep.name == "memdeck"]
    if not eps:
        pytest.skip("memdeck is not installed with its entry point in this environment")
    assert eps[0].value == "memdeck.core.plugin.entry"  # a module, as Hermes' getattr(module, 'register') needs
    home = prepare(tmp_path, install=False)
    out = drive(home.path, "ep")
    assert out["source"] == "entrypoint" and out["module"] == "memdeck.core.plugin.entry"
    check_behaviour(out, home)


def test_not_enabled_means_not_loaded(tmp_path):
    home = prepare(tmp_path, install=True)
    from memdeck.core.plugin.install import set_enabled

    set_enabled(home, remove="memdeck")
    res = run_py("""
        from hermes_cli.plugins import PluginManager
        pm = PluginManager(); pm.discover_and_load()
        lp = pm._plugins["memdeck"]
        print("STATE", lp.enabled, bool(pm._hooks.get("pre_llm_call")))
        """, env={"HERMES_HOME": str(home.path)})
    assert "STATE False False" in res.stdout, res.stderr[-2000:]
