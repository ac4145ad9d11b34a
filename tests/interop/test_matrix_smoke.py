"""Interop matrix smoke tests: memdeck against the real Hermes 0.17 ... 0.22 (0.21.0 and 0.21.5 included), each in its own venv.

Every test runs once per version of ``tests/interop/matrix/venvs.SPECS``. Hermes runs in its
venv through ``tests/interop/matrix/driver.py``; memdeck runs here, on the same home. A
version whose venv cannot be built is skipped with the install's reason. Issue 10's known
bugs (audit and recall snippets on >= 0.20, 0.22 pending records) were strict xfails here
until fixed; the tests now pass on every version.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.interop.matrix import deck, run
from tests.interop.matrix.corpus import CORPUS, HERMES_DIFFS
from tests.interop.matrix.run import version_tuple as _vt
from tests.interop.matrix.venvs import SPECS, hermes_python

pytestmark = pytest.mark.interop

DRIVER = Path(__file__).resolve().parent / "matrix" / "driver.py"
VERSIONS = list(SPECS)


@pytest.fixture(scope="module", params=VERSIONS)
def hermes(request: pytest.FixtureRequest) -> tuple[str, Path]:
    """(version, python of that Hermes' venv); skipped with the reason when it cannot be built."""
    version = request.param
    py = hermes_python(SPECS[version])
    if isinstance(py, str):
        pytest.skip(f"Hermes {version} unavailable: {py}")
    return version, py


def drive(hermes: tuple[str, Path], home: Path, commands: list[dict[str, Any]]) -> list[Any]:
    """Run ``commands`` with the real Hermes on ``home``; every result must be free of errors."""
    return run.drive(hermes[1], home, commands, timeout=300, failed=lambda res: isinstance(res, dict) and "error" in res)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "hermes_home"
    (h / "memories").mkdir(parents=True)
    (tmp_path / "user_home").mkdir(exist_ok=True)
    return h


ENTRIES = ["First fact", "Second fact\nmultiline", "a § inside is fine", "Ünïcödé ✓ entry"]


# ------------------------------------------------------------------------------ memory files


def test_hermes_writes_memdeck_reads(hermes, home: Path) -> None:
    res = drive(hermes, home, [{"op": "mem", "action": "add", "target": "memory", "content": e} for e in ENTRIES]
                + [{"op": "mem", "action": "add", "target": "user", "content": "Name: Ada"},
                   {"op": "mem_read", "target": "memory"}])
    assert all(r.get("success") for r in res[:5])
    raw = (home / "memories" / "MEMORY.md").read_bytes().decode("utf-8")
    assert res[-1]["raw"] == raw == "\n§\n".join(ENTRIES)
    assert deck.entries(home, "memory") == res[-1]["entries"] == ENTRIES
    assert deck.entries(home, "user") == ["Name: Ada"]


def test_memdeck_writes_hermes_reads(hermes, home: Path) -> None:
    for e in ENTRIES:
        deck.add(home, "memory", e)
    deck.add(home, "user", "Prefers tabs")
    written = (home / "memories" / "MEMORY.md").read_bytes()
    res = drive(hermes, home, [{"op": "mem_read", "target": "memory"}, {"op": "mem_read", "target": "user"},
                               {"op": "mem", "action": "add", "target": "memory", "content": "from hermes"},
                               {"op": "mem_read", "target": "memory"}])
    assert res[0]["raw"].encode("utf-8") == written
    assert res[0]["entries"] == ENTRIES and res[1]["entries"] == ["Prefers tabs"]
    # Hermes appends to memdeck's file without rewriting what memdeck wrote
    assert res[3]["raw"].encode("utf-8") == written + "\n§\nfrom hermes".encode()
    assert deck.entries(home) == ENTRIES + ["from hermes"]


# ------------------------------------------------------------------------------ state.db


def _session_plan(prompt: str) -> list[dict[str, Any]]:
    plan: list[dict[str, Any]] = [{"op": "session", "id": "S1", "source": "cli", "system_prompt": prompt}]
    for i in range(4):
        plan.append({"op": "msg", "sid": "S1", "role": "user", "content": f"turn {i}: deploy the service"})
        plan.append({"op": "msg", "sid": "S1", "role": "assistant", "content": f"ok {i}"})
    plan.append({"op": "compact", "sid": "S1", "head": 1, "tail": 2, "summary": "We deployed the service.",
                 "child": "S1c"})
    return plan


def _live_sid(res: list[Any]) -> str:
    compact = next(r for r in res if isinstance(r, dict) and r.get("mode"))
    return "S1c" if compact["mode"] == "rotation" else "S1"


def test_statedb_session_and_compaction(hermes, home: Path) -> None:
    version, _ = hermes
    res = drive(hermes, home, [{"op": "info"}] + _session_plan("You are Hermes."))
    info = res[0]
    db = deck.StateDB(home / "state.db")
    try:
        assert db.status().ok, db.status()
        ids = {s.id for s in db.sessions()}
        live = _live_sid(res)
        assert {"S1", live} <= ids
        events = db.compactions()
        assert len(events) == 1, events
        if _vt(version) < (0, 18):  # 0.17 has no archive_and_compact: compaction is a rotation
            assert not info["sessiondb"]["archive_and_compact"] and live == "S1c"
            assert db.session("S1").end_reason == "compression"
        else:
            assert live == "S1" and db.session("S1").compactions == 1
        assert events[0].session_id in {"S1", "S1c"}
    finally:
        db.close()


def test_audit_sees_the_system_prompt(hermes, home: Path) -> None:
    """An anchor kept alive only by the memory block of the system prompt audits "alive", 100."""
    prompt = "You are Hermes.\nMEMORY (your personal notes)\nUse metric units in every answer."
    res = drive(hermes, home, _session_plan(prompt))
    live = _live_sid(res)
    if live != "S1":
        drive(hermes, home, [{"op": "system_prompt", "sid": live, "prompt": prompt}])
    h = deck.home(home)
    store = deck.AnchorStore(h)
    store.update_session(live, lambda s: s.add(deck.Anchor(id="pin_metric", text="Use metric units",
                                                           reminder="Use metric units", priority=80,
                                                           probes=["metric", "units"])))
    db = deck.StateDB(home / "state.db")
    try:
        audit = deck.audit_session(db, store, live, with_history=False)
    finally:
        db.close()
    assert audit.compactions == 1
    assert [(a.anchor.id, a.state) for a in audit.anchors] == [("pin_metric", "alive")]
    assert audit.score == 100


def test_recall_snippet_for_tool_call_match(hermes, home: Path) -> None:
    call = [{"id": "c1", "type": "function", "function": {"name": "memory", "arguments": "{\"content\": \"zebrafish\"}"}}]
    res = drive(hermes, home, [
        {"op": "session", "id": "S1", "source": "cli"},
        {"op": "msg", "sid": "S1", "role": "user", "content": "remember my fish"},
        {"op": "msg", "sid": "S1", "role": "assistant", "content": "", "tool_calls": call},
        {"op": "session", "id": "S2", "source": "cli"},
        {"op": "search", "query": "zebrafish", "current_session_id": "S2"}])
    theirs = res[-1]
    assert [r["session_id"] for r in theirs["tool"]["results"]] == ["S1"]  # the current session excluded
    hermes_snips = {r["id"]: r["snippet"] for r in theirs["rows"]}
    assert any(">>>zebrafish<<<" in (s or "") for s in hermes_snips.values()), hermes_snips
    db = deck.StateDB(home / "state.db")
    try:
        ours = {r["id"]: r["snippet"] for r in deck.search_messages(db, "zebrafish")}
    finally:
        db.close()
    assert set(ours) == set(hermes_snips)
    assert all(">>>zebrafish<<<" in ours[i] for i in ours), ours


# ------------------------------------------------------------------------------ threat scan


def test_threat_verdicts_match_the_documented_differences(hermes, home: Path) -> None:
    version, _ = hermes
    names = list(CORPUS)
    res = drive(hermes, home, [{"op": "scan", "texts": [CORPUS[n] for n in names]}])
    theirs = dict(zip(names, res[0]["verdicts"]))
    ours = {n: deck.scan_ids(CORPUS[n]) for n in names}
    diffs = {n: theirs[n] for n in names if theirs[n] != ours[n]}
    assert diffs == HERMES_DIFFS[version]
    # memdeck's per-version table answers "what would this Hermes say" on every text
    rules = deck.rules_for_version(version)
    assert {n: list(deck.hermes_verdict(CORPUS[n], rules)) for n in names} == theirs, rules


# ------------------------------------------------------------------------------ pending writes


def test_staged_records_are_listed_and_applicable(hermes, home: Path) -> None:
    version, _ = hermes
    edit = "patch" if _vt(version) >= (0, 22) else "replace"
    content = "metric" if edit == "patch" else "Use metric units always"
    res = drive(hermes, home, [
        {"op": "mem", "action": "add", "target": "memory", "content": "Use imperial units"},
        {"op": "mem", "action": "add", "target": "memory", "content": "Indent with tabs"},
        {"op": "config", "text": "memory:\n  write_approval: true\n"},
        {"op": "stage", "action": edit, "target": "memory", "old_text": "imperial", "content": content},
        {"op": "stage", "target": "memory", "operations": [{"action": "add", "content": "Cite sources"},
                                                           {"action": edit, "old_text": "tabs", "content": "spaces"
                                                            if edit == "patch" else "Indent with spaces"}]}])
    staged = {r["result"]["pending_id"]: r["record"] for r in res[3:]}
    assert all(r["result"].get("staged") for r in res[3:])
    listed = {p.id: p for p in deck.list_pending(deck.home(home))}
    assert set(listed) == set(staged)
    assert {i: p.malformed for i, p in listed.items()} == {i: None for i in staged}


def test_stale_pending_write_is_refused_like_hermes(hermes, home: Path) -> None:
    """0.21.5 and 0.22 pin a staged remove to the entry reviewed (matched_entry); approving it after
    that entry changed must be refused, as that Hermes refuses ("Entry changed since it was staged")."""
    version, _ = hermes
    if _vt(version) < (0, 21, 5):
        pytest.skip(f"Hermes {version} stages no matched_entry (replay by old_text substring, as memdeck does)")
    res = drive(hermes, home, [
        {"op": "mem", "action": "add", "target": "memory", "content": "alpha old fact"},
        {"op": "config", "text": "memory:\n  write_approval: true\n"},
        {"op": "stage", "action": "remove", "target": "memory", "old_text": "alpha"},
        {"op": "config", "text": "memory:\n  write_approval: false\n"},
        {"op": "mem", "action": "remove", "target": "memory", "old_text": "alpha old fact"},
        {"op": "mem", "action": "add", "target": "memory", "content": "alpha new fact"}])
    pid = res[2]["result"]["pending_id"]
    assert res[2]["record"]["payload"]["matched_entry"] == "alpha old fact"
    # Hermes itself refuses, in a copy of the home
    import shutil
    twin = home.parent / "twin_home"
    shutil.copytree(home, twin)
    hres = drive(hermes, twin, [{"op": "approve", "id": pid}])[0]
    assert not hres["result"]["success"] and "Entry changed since it was staged" in hres["result"]["error"]
    with pytest.raises(deck.Refused) as exc:
        deck.approve_pending(deck.home(home), None, pid)
    assert "Entry changed since it was staged" in str(exc.value) and exc.value.code == "stale"
    assert deck.entries(home) == ["alpha new fact"]
    assert (home / "pending" / "memory" / f"{pid}.json").exists()  # the record is kept, as Hermes keeps it


# ------------------------------------------------------------------------------ plugin manager


PLUGIN_INIT = '''
def _hook(**kwargs):
    return None

def register(ctx):
    ctx.register_hook("pre_llm_call", _hook)
'''


def test_plugin_manager_loads_a_user_plugin(hermes, home: Path) -> None:
    """The version's own plugin manager (PyYAML or ruamel.yaml) finds and enables a user plugin."""
    pdir = home / "plugins" / "mdprobe"
    pdir.mkdir(parents=True)
    (pdir / "plugin.yaml").write_text("name: mdprobe\nversion: 0.0.1\ndescription: matrix probe\n"
                                      "provides_hooks:\n  - pre_llm_call\n")
    (pdir / "__init__.py").write_text(PLUGIN_INIT)
    res = drive(hermes, home, [{"op": "config", "text": "plugins:\n  enabled:\n    - mdprobe\n"},
                               {"op": "plugins", "names": ["mdprobe"]}, {"op": "info"}])
    plugins = res[1]["plugins"]
    assert res[1]["group"] == "hermes_agent.plugins"
    assert len(plugins) == 1, plugins
    (probe,) = plugins.values()
    assert probe["enabled"] and probe["error"] is None and probe["hooks"] == ["pre_llm_call"], probe
    if _vt(hermes[0]) >= (0, 22):
        assert res[2]["yaml"] is None and res[2]["ruamel.yaml"]  # the iot fork: ruamel.yaml only


def _approve_both(hermes, home: Path, pid: str) -> tuple[dict[str, Any], Any]:
    """Approve ``pid`` with this Hermes in a twin of ``home`` and with memdeck in ``home``:
    (Hermes' result, memdeck's result or its Refused)."""
    import shutil

    twin = home.parent / "twin_home"
    if twin.exists():
        shutil.rmtree(twin)
    shutil.copytree(home, twin)
    theirs = drive(hermes, twin, [{"op": "approve", "id": pid}])[0]["result"]
    try:
        ours: Any = deck.approve_pending(deck.home(home), None, pid)
    except deck.Refused as exc:
        ours = exc
    return theirs, ours


def test_pending_approve_parity(hermes, home: Path) -> None:
    """Every staged shape this Hermes produces, approved by memdeck and by that Hermes'
    ``apply_memory_pending`` on a copy of the same home: the same outcome and byte-identical
    MEMORY.md, step after step (0.22: patch alone, patch in a batch, a stale batch refused whole)."""
    version, _ = hermes
    edit = "patch" if _vt(version) >= (0, 22) else "replace"
    res = drive(hermes, home, [
        {"op": "mem", "action": "add", "target": "memory", "content": "Use imperial units"},
        {"op": "mem", "action": "add", "target": "memory", "content": "Indent with tabs"},
        {"op": "mem", "action": "add", "target": "memory", "content": "Deploy on fridays"},
        {"op": "config", "text": "memory:\n  write_approval: true\n"},
        {"op": "stage", "action": edit, "target": "memory", "old_text": "imperial",
         "content": "metric" if edit == "patch" else "Use metric units"},
        {"op": "stage", "target": "memory", "operations": [
            {"action": "add", "content": "Cite sources"},
            {"action": edit, "old_text": "tabs", "content": "spaces" if edit == "patch" else "Indent with spaces"},
            {"action": "remove", "old_text": "fridays"}]},
        {"op": "stage", "action": "add", "target": "memory", "content": "Prefers dark mode"}])
    pids = [r["result"]["pending_id"] for r in res[4:]]
    mem = home / "memories" / "MEMORY.md"
    for pid in pids:
        theirs, ours = _approve_both(hermes, home, pid)
        assert theirs["success"] and not isinstance(ours, deck.Refused), (pid, theirs, ours)
        assert mem.read_bytes() == (home.parent / "twin_home" / "memories" / "MEMORY.md").read_bytes(), pid
    assert deck.entries(home) == (["Use metric units", "Indent with spaces", "Cite sources", "Prefers dark mode"])
    if _vt(version) >= (0, 22):  # all-or-nothing: one stale op refuses the whole batch, like Hermes
        res = drive(hermes, home, [
            {"op": "stage", "target": "memory", "operations": [
                {"action": "add", "content": "New rule"}, {"action": "remove", "old_text": "dark mode"}]},
            {"op": "config", "text": "memory:\n  write_approval: false\n"},
            {"op": "mem", "action": "patch", "target": "memory", "old_text": "dark", "content": "light"}])
        before = mem.read_bytes()
        theirs, ours = _approve_both(hermes, home, res[0]["result"]["pending_id"])
        assert not theirs["success"] and "Entry changed since it was staged" in theirs["error"]
        assert isinstance(ours, deck.Refused) and ours.code == "stale" and "No operations were applied" in str(ours)
        assert mem.read_bytes() == before


# ------------------------------------------------------------------------------ memdeck's plugin


PLUGIN_SID = "20260701_101010_feed01"


@pytest.mark.parametrize("reinject_every_turn", [False, True])
def test_memdeck_plugin_loads_and_reinjects(hermes, home: Path, reinject_every_turn: bool) -> None:
    """memdeck's directory plugin, installed by ``core/plugin/install.py``, loads through this
    Hermes' plugin manager (0.22: no PyYAML), re-injects the drifted anchor after a compaction
    built with this Hermes' SUMMARY_PREFIX, and honours ``memlock:`` in config.yaml (0.22 reads
    it with ruamel.yaml): ``hard_reinject_turns: 1`` re-injects on the quiet turn too."""
    from memdeck.core.plugin.install import install_plugin
    from tests.helpers.plugin import BRITISH, BULLETS, seed

    h = deck.home(home)
    (home / "config.yaml").write_text("model:\n  default: test/model\nmemlock:\n  hard_reinject_turns: "
                                      + ("1" if reinject_every_turn else "40") + "\n", encoding="utf-8")
    seed(h, PLUGIN_SID, BULLETS, BRITISH)
    install_plugin(h)
    (out,) = drive(hermes, home, [{"op": "plugin_turns", "sid": PLUGIN_SID, "no_entry_points": True, "active": [
        {"role": "user", "content": "Use British English spelling everywhere, please."},
        {"role": "assistant", "content": "Of course: colour, favour."}]}])
    assert out["loaded"] and out["enabled"] and out["load_error"] is None, out
    assert out["module"] == "hermes_plugins.memdeck"
    # pre_gateway_dispatch: /memdeck in a chat learns its sender there (core/plugin/chat_origin.py);
    # post_tool_call + transform_llm_output: the chat notice of a staged write (core/plugin/chat_notice.py);
    # pre_api_request + post_api_request: each request's usage (core/plugin/usage_hook.py, issue 37)
    assert out["hooks"] == ["on_session_end", "on_session_start", "post_api_request", "post_tool_call",
                            "pre_api_request", "pre_gateway_dispatch", "pre_llm_call", "transform_llm_output"]
    bullets = "[Standing instructions — still active]\n  - Always reply in bullet points, never paragraphs"
    if reinject_every_turn:  # the memlock: section was read (ruamel.yaml on 0.22)
        assert out["quiet"] and all("Standing instructions" in r["context"] for r in out["quiet"]), out["quiet"]
    else:
        assert out["quiet"] == [] and out["compacted"] == [{"context": bullets}] and out["again"] == [], out


# ------------------------------------------------------------------------------ concurrent writers


MEMDECK_WRITER = """
import sys
from pathlib import Path
from memdeck.core.config import load_config
from memdeck.core.home import HermesHome
from memdeck.core.memory.store import MemoryStore
h = HermesHome(Path(sys.argv[1]))
for text in sys.argv[2:]:
    MemoryStore(h, load_config(h), actor="interop").add("memory", text)
"""


def test_concurrent_writers_lose_nothing(hermes, home: Path) -> None:
    """Two processes of this Hermes' MemoryStore and two of memdeck's add entries to MEMORY.md at
    the same time, all through the shared ``MEMORY.md.lock``: every entry survives."""
    _, py = hermes
    n = 12
    names = {w: [f"{w} entry {i:02d} of the race" for i in range(n)] for w in ("h1", "h2", "m1", "m2")}
    env = dict(os.environ, HERMES_HOME=str(home), HOME=str(home.parent / "user_home"))
    env.pop("PYTHONPATH", None)
    procs = []
    for w in ("h1", "h2"):
        cmds = json.dumps([{"op": "mem", "action": "add", "target": "memory", "content": t} for t in names[w]])
        p = subprocess.Popen([str(py), str(DRIVER), str(home)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env, cwd=str(home.parent))
        procs.append((w, p, cmds))
    for w in ("m1", "m2"):
        p = subprocess.Popen([sys.executable, "-c", MEMDECK_WRITER, str(home), *names[w]], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append((w, p, ""))
    for w, p, stdin in procs:
        out, err = p.communicate(stdin, timeout=300)
        assert p.returncode == 0, (w, err[-2000:])
        if w.startswith("h"):
            assert all(r.get("success") for r in json.loads(out)["results"]), (w, out[-2000:])
    got = deck.entries(home)
    assert sorted(got) == sorted(t for w in names.values() for t in w)
    for w in names.values():  # each writer's entries keep their order
        assert [e for e in got if e in w] == w
    hermes_view = drive(hermes, home, [{"op": "mem_read", "target": "memory"}])[0]
    assert hermes_view["entries"] == got


# ------------------------------------------------------------------------------ recall parity


RECALL_QUERIES = ["deploy", "zebrafish", "kubernetes rollout", "数据库迁移", "\"blue green\""]
EXPECTED_SESSIONS = {"deploy": ["S1"], "zebrafish": ["S3"], "kubernetes rollout": ["S1"], "数据库迁移": ["S2"],
                     "\"blue green\"": ["S1"]}


def test_recall_parity_with_session_search(hermes, home: Path) -> None:
    """memdeck's recall names the sessions this Hermes' ``session_search`` returns (discover
    mode, current session excluded), and its raw rows and snippets equal ``search_messages``'."""
    plan: list[dict[str, Any]] = []
    talk = {"S1": ["how do we deploy the api?", "we deploy with a blue green rollout on kubernetes"],
            "S2": ["数据库迁移什么时候开始", "数据库迁移在周五开始"],
            "S3": ["my zebrafish tank needs a heater", "a zebrafish likes 26 degrees"],
            "S4": ["deploy the docs too", "the docs deploy from main"]}
    for sid, (u, a) in talk.items():
        plan += [{"op": "session", "id": sid, "source": "cli"},
                 {"op": "msg", "sid": sid, "role": "user", "content": u},
                 {"op": "msg", "sid": sid, "role": "assistant", "content": a}]
    plan += [{"op": "search", "query": q, "current_session_id": "S4"} for q in RECALL_QUERIES]
    res = drive(hermes, home, plan)[len(plan) - len(RECALL_QUERIES):]
    db = deck.StateDB(home / "state.db")
    try:
        for q, theirs in zip(RECALL_QUERIES, res):
            assert "tool" in theirs, theirs
            their_sessions = [r["session_id"] for r in theirs["tool"].get("results", [])]
            ours = [h.session_id for h in deck.recall(db, q, current_session_id="S4")]
            assert ours == their_sessions, (q, ours, their_sessions)
            assert their_sessions == EXPECTED_SESSIONS[q], (q, their_sessions)  # the test is not vacuous
            rows = {r["id"]: r["snippet"] for r in deck.search_messages(db, q, with_context=False)}
            assert rows == {r["id"]: r["snippet"] for r in theirs["rows"]}, q
    finally:
        db.close()


# ------------------------------------------------------------------------------ HermesProfile


PROFILE = {  # version -> (version label, system prompt location, messages_fts columns, in-place compaction)
    "0.17.0": ("0.17", "sessions.system_prompt", ("content",), False),
    "0.18.2": ("0.18", "sessions.system_prompt", ("content",), True),
    "0.19.0": ("0.19", "sessions.system_prompt", ("content",), True),
    "0.20.1.2": ("0.20", "system_prompts", ("content", "tool_name", "tool_calls"), True),
    # schema 26 like 0.20, told apart by messages._compressed_summary / gateway_heartbeats / state_meta
    "0.21.0.post1": ("0.21.0", "system_prompts", ("content", "tool_name", "tool_calls"), True),
    # schema 30 is 0.21.3-0.21.5 until a staged record (matched_entry) or _config_version says which
    "0.21.5.post2": ("0.21.3-0.21.5", "system_prompts", ("content", "tool_name", "tool_calls"), True),
    "0.22.2.post1": ("0.22", "system_prompts", ("content", "tool_name", "tool_calls"), True),
}


def test_profile_of_a_real_home(hermes, home: Path) -> None:
    """The HermesProfile of a home this version built: its schema and version, where the system
    prompt lives, the FTS layout, and no degradation (every version in the matrix is supported)."""
    from memdeck.core.sessions.profile import detect_profile

    version, _ = hermes
    res = drive(hermes, home, [{"op": "info"}, {"op": "session", "id": "S1", "source": "cli", "system_prompt": "hi"}])
    p = detect_profile(deck.home(home))
    label, prompt_in, fts_cols, in_place = PROFILE[version]
    assert p.schema_version == res[0]["schema_version"] and p.version == label
    assert p.system_prompt_in == prompt_in and p.fts is not None and p.fts.columns == fts_cols
    assert bool(p.fts.content) == (_vt(version) >= (0, 20))  # external content from 0.20
    assert p.in_place_compaction == in_place and p.summary_flag == (_vt(version) >= (0, 21))
    # the one named degradation of a real home: 0.17/0.18 store no api_content (issue 25)
    want = (("api_content",) if _vt(version) < (0, 19) else ())
    assert tuple(w for w in want if any(w in d for d in p.degradations)) == want and len(p.degradations) == len(want), \
        p.degradations
    assert p.threat_rules == deck.rules_for_version(version)
    if _vt(version) >= (0, 21, 5):  # a staged record with matched_entry names 0.21.5 exactly
        drive(hermes, home, [{"op": "mem", "action": "add", "target": "memory", "content": "alpha fact"},
                             {"op": "config", "text": "memory:\n  write_approval: true\n"},
                             {"op": "stage", "action": "remove", "target": "memory", "old_text": "alpha"}])
        refined = detect_profile(deck.home(home))
        assert refined.version == ("0.22" if _vt(version) >= (0, 22) else "0.21.5"), refined.version
        assert refined.threat_rules == "0.22"
