"""memdeck plugin install/uninstall: the directory plugin, its vendored core, config.yaml opt-in."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from memdeck.core.cli import main as cli_main
from memdeck.core.plugin.entry import make_callbacks, register
from memdeck.core.plugin.install import (
    PLUGIN_NAME,
    install_plugin,
    plugin_dir,
    plugin_files,
    plugin_status,
    uninstall_plugin,
    vendored_files,
)
from tests.helpers.plugin import BULLETS, RecordingContext, history, seed, write_config

CONFIG = """\
# Hermes config (hand-edited; keep my comments)
model:
  default: anthropic/claude   # main model
plugins:
  enabled:
  - disk-cleanup  # trusted
  disabled: []
memlock:
  detection: keyword   # the MemLock config memdeck reuses
  max_slots: 4
"""


def test_vendored_core_is_the_import_closure_without_cli():
    files = vendored_files()
    assert "plugin/entry.py" in files and "plugin/guard.py" in files and "anchors/store.py" in files
    assert "anchors/audit.py" in files and "sessions/compaction.py" in files and "__init__.py" in files
    assert not any(f.startswith("cli/") for f in files)
    assert "plugin/install.py" not in files  # the installer is not needed at runtime
    # only what the plugin runs: no snapshot, no overview; the memory store only for /memdeck
    # (issue 35: plugin/chat_command.py, imported when the command runs)
    assert "plugin/chat_command.py" in files and "memory/store.py" in files
    # the dashboard tab's API (issue 35 #3) and `/memdeck stale` list stale sessions: the state.db
    # reader, never the overview
    assert "plugin/dashboard_api.py" in files and "sessions/statedb.py" in files and "context/report.py" in files
    assert not {"overview/status.py", "overview/snapshot.py"} & set(files)
    assert not any(f.startswith("overview/") for f in files)
    pf = plugin_files()
    assert set(pf) == {"plugin.yaml", "__init__.py"} | {f"_core/{f}" for f in files} | {
        "dashboard/manifest.json", "dashboard/memdeck.js", "dashboard/plugin_api.py"}
    assert b"from ._core.plugin.entry import register" in pf["__init__.py"]
    assert b"MemoryProvider" not in pf["__init__.py"]  # Hermes would reclassify it as a memory provider


def test_install_writes_enables_and_is_idempotent(hermes_home):
    write_config(hermes_home, CONFIG)
    res = install_plugin(hermes_home)
    assert res.files_changed and res.config_changed
    assert res.enabled == ["disk-cleanup", PLUGIN_NAME]
    assert res.backup is not None and res.backup.read_text(encoding="utf-8") == CONFIG
    new = hermes_home.config_path.read_text(encoding="utf-8")
    assert new == CONFIG.replace("  - disk-cleanup  # trusted\n", "  - disk-cleanup  # trusted\n  - memdeck\n")
    on_disk = {p.relative_to(plugin_dir(hermes_home)).as_posix(): p.read_bytes()
               for p in plugin_dir(hermes_home).rglob("*") if p.is_file()}
    assert on_disk == plugin_files()
    assert not (hermes_home.memdeck_dir / "staging").exists()
    again = install_plugin(hermes_home)
    assert not again.files_changed and not again.config_changed and again.backup is None
    assert hermes_home.config_path.read_text(encoding="utf-8") == new
    assert len(list(hermes_home.path.glob("config.yaml.bak-*"))) == 1
    st = plugin_status(hermes_home)
    assert st["installed"] and st["up_to_date"] and st["enabled"] and not st["memlock_enabled"]


def test_install_replaces_an_outdated_tree(hermes_home):
    install_plugin(hermes_home)
    stray = plugin_dir(hermes_home) / "_core" / "old_module.py"
    stray.write_text("x = 1\n")
    (plugin_dir(hermes_home) / "_core" / "guard.py").write_text("broken\n")
    assert not plugin_status(hermes_home)["up_to_date"]
    res = install_plugin(hermes_home)
    assert res.files_changed and not stray.exists()
    assert plugin_status(hermes_home)["up_to_date"]


def test_uninstall_reverses_install_and_is_idempotent(hermes_home):
    write_config(hermes_home, CONFIG)
    install_plugin(hermes_home)
    seed(hermes_home, "s1", BULLETS)  # anchors are never touched by uninstall
    res = uninstall_plugin(hermes_home)
    assert res.files_changed and res.config_changed and res.enabled == ["disk-cleanup"]
    assert hermes_home.config_path.read_text(encoding="utf-8") == CONFIG
    assert not plugin_dir(hermes_home).exists()
    assert (hermes_home.memlock_dir / "s1.json").exists()
    assert len(list(hermes_home.path.glob("config.yaml.bak-*"))) == 2
    again = uninstall_plugin(hermes_home)
    assert not again.files_changed and not again.config_changed


def test_install_without_config_creates_it(hermes_home):
    res = install_plugin(hermes_home)
    assert res.backup is None
    assert hermes_home.config_path.read_text(encoding="utf-8") == "plugins:\n  enabled:\n  - memdeck\n"


def test_memlock_and_disabled_warnings(hermes_home):
    write_config(hermes_home, "plugins:\n  enabled: [memlock]\n  disabled: [memdeck]\n")
    res = install_plugin(hermes_home)
    assert res.enabled == ["memlock", "memdeck"]
    assert any("memlock is enabled too" in w for w in res.warnings)
    assert any("plugins.disabled" in w for w in res.warnings)


def test_bad_config_refused_files_untouched(hermes_home):
    write_config(hermes_home, "plugins:\n  enabled: memdeck\n")
    from memdeck.core.errors import Refused

    with pytest.raises(Refused):
        install_plugin(hermes_home)
    assert hermes_home.config_path.read_text(encoding="utf-8") == "plugins:\n  enabled: memdeck\n"
    assert not list(hermes_home.path.glob("config.yaml.bak-*"))
    # A refusal leaves the whole disk untouched: no half-install (files without the opt-in).
    assert not plugin_dir(hermes_home).exists()
    assert not (hermes_home.path / "memdeck" / "staging").exists()


def test_cli_install_status_uninstall(hermes_home, capsys):
    write_config(hermes_home, CONFIG)
    assert cli_main(["plugin", "install", "--home", str(hermes_home.path)]) == 0
    out = capsys.readouterr().out
    assert f"installed {plugin_dir(hermes_home)}" in out and "backup: config.yaml.bak-" in out
    assert cli_main(["plugin", "status", "--home", str(hermes_home.path), "--json"]) == 0
    st = json.loads(capsys.readouterr().out)
    assert st["installed"] and st["enabled"]
    assert cli_main(["plugin", "uninstall", "--home", str(hermes_home.path)]) == 0
    assert not plugin_dir(hermes_home).exists()
    assert cli_main(["plugin", "install", "--home", str(hermes_home.path), "--no-enable"]) == 0
    assert plugin_dir(hermes_home).is_dir()
    import yaml

    assert yaml.safe_load(hermes_home.config_path.read_text(encoding="utf-8"))["plugins"]["enabled"] == ["disk-cleanup"]


def test_register_wires_hooks_tool_command(hermes_home):
    ctx = RecordingContext()
    register(ctx)
    assert set(ctx.hooks) == {"on_session_start", "pre_llm_call", "on_session_end", "pre_gateway_dispatch",
                              "post_tool_call", "transform_llm_output",
                              "pre_api_request", "post_api_request"}
    assert ctx.tools["guard_pin"]["toolset"] == "guard"
    assert ctx.tools["guard_pin"]["schema"]["name"] == "guard_pin"
    assert "guard" in ctx.commands and "memdeck" in ctx.commands


def test_hook_exceptions_never_propagate(hermes_home, caplog):
    class Boom:
        def __getattr__(self, name):
            def fail(*a, **k):
                raise RuntimeError(f"boom in {name}")
            return fail

    cb = make_callbacks(Boom())  # type: ignore[arg-type]
    assert cb["pre_llm_call"](session_id="s", conversation_history=[], user_message="x") is None
    assert cb["on_session_start"](session_id="s") is None
    assert cb["on_session_end"](session_id="s") is None
    assert cb["guard_pin"]({"text": "x"}, session_id="s").startswith("Error:")
    assert "unavailable" in cb["guard"]("")
    assert "pre_llm_call hook failed (RuntimeError: boom in pre_llm_call)" in caplog.text


def test_hook_survives_a_corrupt_session_file(hermes_home):
    write_config(hermes_home, "memlock:\n  inject: always\n")
    ctx = RecordingContext()
    register(ctx)
    path = hermes_home.memlock_dir / "s1.json"
    path.parent.mkdir(parents=True)
    path.write_text("{oops", encoding="utf-8")
    pre = ctx.hooks["pre_llm_call"][0]
    assert pre(session_id="s1", conversation_history=history(["x"]), user_message="x") is None
    assert path.read_text(encoding="utf-8") == "{oops"


BLOCKER = r"""
import sys, importlib.abc, importlib.util, json, types
BLOCKED = {"numpy", "yaml", "ruamel", "sentence_transformers", "textual", "rich", "core", "hermes_cli", "agent"}
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"blocked: {name}")
        return None
sys.meta_path.insert(0, Block())
plugin_dir, sid = sys.argv[1], sys.argv[2]
ns = types.ModuleType("hermes_plugins"); ns.__path__ = []; sys.modules["hermes_plugins"] = ns
spec = importlib.util.spec_from_file_location("hermes_plugins.memdeck", plugin_dir + "/__init__.py",
                                              submodule_search_locations=[plugin_dir])
mod = importlib.util.module_from_spec(spec); sys.modules["hermes_plugins.memdeck"] = mod
spec.loader.exec_module(mod)
class Ctx:
    hooks = {}; tools = {}; commands = {}
    def register_hook(self, n, cb): self.hooks[n] = cb
    def register_tool(self, name, toolset, schema, handler, **k): self.tools[name] = handler
    def register_command(self, name, handler, description="", args_hint=""): self.commands[name] = handler
ctx = Ctx(); mod.register(ctx)
prefix = "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted into the summary below."
hist = [{"role": "system", "content": "s"}, {"role": "user", "content": prefix + " old stuff"},
        {"role": "user", "content": "hello there"}]
ctx.hooks["on_session_start"](session_id=sid)
res = ctx.hooks["pre_llm_call"](session_id=sid, conversation_history=hist, user_message="hello there")
pin = ctx.tools["guard_pin"]({"text": "Answer in French."}, session_id=sid)
print("RESULT" + json.dumps({"res": res, "pin": pin,
      "loaded": sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)}))
"""


def test_vendored_plugin_keyword_path_needs_only_the_stdlib(hermes_home):
    install_plugin(hermes_home)
    seed(hermes_home, "s1", BULLETS)
    proc = subprocess.run([sys.executable, "-c", BLOCKER, str(plugin_dir(hermes_home)), "s1"], capture_output=True,
                          text=True, timeout=60, env={"HERMES_HOME": str(hermes_home.path), "PATH": "/usr/bin:/bin"},
                          cwd=str(hermes_home.path))
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")), None)
    assert line, proc.stderr[-3000:]
    out = json.loads(line[6:])
    assert out["loaded"] == []
    assert out["res"] == {"context": "[Standing instructions — still active]\n"
                                     "  - Always reply in bullet points, never paragraphs"}
    assert out["pin"].startswith("Pinned instruction (id=pin_"), out["pin"]


def test_cli_install_into_an_unwritable_plugins_path_is_an_error_not_a_traceback(hermes_home, capsys):
    write_config(hermes_home, CONFIG)
    before = hermes_home.config_path.read_bytes()
    hermes_home.plugins_dir.write_text("a file where plugins/ should be", encoding="utf-8")
    assert cli_main(["plugin", "install", "--home", str(hermes_home.path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("memdeck: error: ") and "plugins" in err and "Traceback" not in err
    assert hermes_home.config_path.read_bytes() == before
    assert not list(hermes_home.path.glob("config.yaml.bak-*"))


def test_an_install_that_cannot_stage_leaves_plugins_untouched(hermes_home, capsys):
    """The plugin's files are staged in memdeck/ before plugins/ is created or locked: a staging
    that fails (here memdeck/staging is a file; a read-only memdeck/ or a full disk alike) left an
    empty plugins/ and its lock behind (found by the hostile homes)."""
    write_config(hermes_home, CONFIG)
    before = hermes_home.config_path.read_bytes()
    (hermes_home.path / "memdeck").mkdir()
    (hermes_home.path / "memdeck" / "staging").write_text("in the way", encoding="utf-8")
    assert cli_main(["--home", str(hermes_home.path), "plugin", "install"]) == 1
    assert "memdeck: error:" in capsys.readouterr().err
    assert not hermes_home.plugins_dir.exists()
    assert hermes_home.config_path.read_bytes() == before


def test_an_alias_bomb_config_is_refused_not_edited(hermes_home):
    """memdeck's config reader refuses a config that expands past its bound; the installer edited
    it anyway (found by the hostile homes)."""
    lines = ['a: &a ["x","x","x","x","x","x","x","x","x","x"]']
    for prev, name in zip("abcdef", "bcdefg"):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 10) + "]")
    write_config(hermes_home, "\n".join(lines) + "\n")
    before = hermes_home.config_path.read_bytes()
    from memdeck.core.errors import Refused

    with pytest.raises(Refused, match="expands to more than"):
        install_plugin(hermes_home)
    assert hermes_home.config_path.read_bytes() == before and not plugin_dir(hermes_home).exists()


def test_status_advises_disabling_memlock_only_when_memdecks_plugin_would_run_too(hermes_home, capsys):
    """Issue 8 #9: with memdeck's plugin not installed, MemLock is the guard; nothing to disable."""
    write_config(hermes_home, "plugins:\n  enabled:\n    - memlock\n")
    assert cli_main(["plugin", "status", "--home", str(hermes_home.path)]) == 0
    cap = capsys.readouterr()
    assert "disable it" not in cap.err and "memlock is enabled and guards this home" in cap.out
    assert cli_main(["plugin", "install", "--home", str(hermes_home.path)]) == 0
    capsys.readouterr()
    assert cli_main(["plugin", "status", "--home", str(hermes_home.path)]) == 0
    assert "memlock is also enabled: disable it" in capsys.readouterr().err


def test_the_dashboard_plugin_is_part_of_the_plugin_directory():
    """Hermes 0.19's dashboard reads plugins/<name>/dashboard/manifest.json: the tab's label, its
    entry script and its API file, both inside dashboard/ (Hermes refuses any other api path)."""
    files = plugin_files()
    manifest = json.loads(files["dashboard/manifest.json"])
    assert manifest["name"] == "memdeck" and manifest["label"] == "Memory"
    assert manifest["entry"] == "memdeck.js" and manifest["api"] == "plugin_api.py"
    assert f"dashboard/{manifest['entry']}" in files and f"dashboard/{manifest['api']}" in files
    js = files["dashboard/memdeck.js"].decode()
    # no dependency and no fetch but the plugin's own API, through the dashboard's authedFetch
    assert "import " not in js and "require(" not in js and "http" not in js
    assert "SDK.authedFetch(API + path" in js and 'var API = "/api/plugins/memdeck"' in js
    assert len(js) < 16_000
