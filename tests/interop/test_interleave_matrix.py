"""Issue 22 Major 1 against every Hermes of the interop matrix (0.17 ... 0.22, each in its venv).

A record staged by that Hermes itself (``memory_tool`` with ``memory.write_approval: true``; 0.22
pins the destructive op with ``matched_entry``, and stages ``patch``) is approved by memdeck,
killed at every crash point (tests/crashpoints.py); then that Hermes adds "deploy freeze on
Fridays" to the same file, memdeck's next command runs (an unrelated write, then the approval
again), and finally that Hermes' own ``/memory approve`` is tried on the same record. The record
must have been applied exactly once or not at all, never twice -- by memdeck or by Hermes -- and
Hermes' new entry must survive. One driver process per step of the plan serves every home
(``tests/interop/matrix/driver.py``, the ``home`` field).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from memdeck.core.config import Config
from memdeck.core.deck import db as deckdb
from memdeck.core.errors import Refused
from memdeck.core.home import HermesHome
from memdeck.core.memory import pending
from memdeck.core.memory.entries import parse_entries
from memdeck.core.memory.store import MemoryStore
from tests.crashpoints import CRASH_STATUS, crash_points, run_in_child
from tests.interop.test_matrix_smoke import DRIVER, _vt, drive, hermes  # noqa: F401 - the per-version fixture

pytestmark = pytest.mark.interop

BASE = ["deploy on Tuesdays", "alpha: use imperial units", "keep this"]
HERMES_ADDS = "deploy freeze on Fridays"
LATER = "a later note from the next command"


def _records(version: str) -> list[dict[str, Any]]:
    """The staged writes of the plan: the repro's remove, and an edit (0.22: ``patch``)."""
    edit = ({"action": "patch", "old_text": "imperial", "content": "metric"} if _vt(version) >= (0, 22)
            else {"action": "replace", "old_text": "imperial", "content": "alpha: use metric units"})
    return [{"action": "remove", "old_text": "deploy"}, edit]


def _entries(home: Path) -> frozenset[str]:
    p = home / "memories" / "MEMORY.md"
    return frozenset(parse_entries(p.read_text(encoding="utf-8") if p.exists() else ""))


def _template(hermes: Any, root: Path, name: str, record: dict[str, Any]) -> tuple[Path, str]:  # noqa: F811 - the fixture
    home = root / name
    (home / "memories").mkdir(parents=True)
    res = drive(hermes, home, [{"op": "mem", "action": "add", "target": "memory", "content": e} for e in BASE] + [
        {"op": "config", "text": "memory:\n  write_approval: true\n"},
        {"op": "stage", "target": "memory", **record},
        {"op": "config", "text": "memory:\n  write_approval: false\n"}])
    staged = res[-2]
    assert staged["result"].get("staged"), staged
    return home, staged["result"]["pending_id"]


def _drive_many(hermes: Any, root: Path, commands: list[dict[str, Any]]) -> list[Any]:  # noqa: F811 - the fixture
    """Like ``drive``, for commands that each name their ``home``; a Hermes refusal (``/memory
    approve`` of a record it cannot find) is a result here, not a failure."""
    _, py = hermes
    (root / "user_home").mkdir(exist_ok=True)
    env = dict(os.environ, HERMES_HOME=str(root / "driver_home"), HOME=str(root / "user_home"))
    env.pop("PYTHONPATH", None)
    proc = subprocess.run([str(py), str(DRIVER), str(root / "driver_home")], input=json.dumps(commands),
                          capture_output=True, text=True, env=env, timeout=600, cwd=str(root))
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout)["results"]
    assert not [r for r in results if isinstance(r, dict) and "trace" in r], results
    return results


def _copy(src: Path, dst: Path) -> HermesHome:
    shutil.copytree(src, dst)  # Hermes' files only: no SQLite file exists in a template yet
    return HermesHome(dst)


def test_a_killed_approval_is_applied_at_most_once_by_anyone(hermes, tmp_path: Path) -> None:  # noqa: F811 - the fixture
    version, _ = hermes
    runs = 0
    problems: list[str] = []
    for k, record in enumerate(_records(version)):
        tpl, pid = _template(hermes, tmp_path, f"tpl{k}", record)
        assert not any(p.suffix == ".db" for p in tpl.rglob("*"))
        old = _entries(tpl)
        dry = _copy(tpl, tmp_path / f"dry{k}")
        steps, log = crash_points(lambda: pending.approve(dry, Config(), pid))
        new = _entries(dry.path)
        assert new != old, f"{version}: approving {record} changed nothing"
        homes: list[HermesHome] = []
        for n in range(1, steps + 1):
            h = _copy(tpl, tmp_path / f"r{k}-{n}")
            status, _, clog = run_in_child(lambda: pending.approve(h, Config(), pid), n)
            if status != CRASH_STATUS:
                problems.append(f"{record['action']} step {n}: the child did not reach its step ({clog[-1:]})")
            homes.append(h)
        # that Hermes writes on the same file, in every home
        res = _drive_many(hermes, tmp_path, [{"op": "mem", "action": "add", "target": "memory",
                                              "content": HERMES_ADDS, "home": str(h.path)} for h in homes])
        assert all(r.get("success") for r in res), res
        for h in homes:  # memdeck's next command, then the approval again
            MemoryStore(h, Config()).add("memory", LATER)
            try:
                pending.approve(h, Config(), pid)
            except Refused:
                pass
        theirs = _drive_many(hermes, tmp_path, [{"op": "approve", "id": pid, "home": str(h.path)} for h in homes])
        once, never = (new | {HERMES_ADDS, LATER}), (old | {HERMES_ADDS, LATER})
        for n, (h, hres) in enumerate(zip(homes, theirs), 1):
            runs += 1
            where = f"{version} {record['action']} killed at step {n} ({log[n - 1]})"
            with deckdb.opened(h) as conn:
                done = conn.execute("SELECT COUNT(*) FROM journal WHERE json_extract(detail, '$.pending_id') = ? "
                                    "AND state = 'done' AND undone_by IS NULL", (pid,)).fetchone()[0]
                unsettled = conn.execute("SELECT COUNT(*) FROM journal WHERE state != 'done'").fetchone()[0]
            hermes_applied = bool(hres.get("result", {}).get("success"))
            final = _entries(h.path)
            if done + hermes_applied > 1:
                problems.append(f"{where}: applied {done} time(s) by memdeck and {int(hermes_applied)} by Hermes")
            if unsettled:
                problems.append(f"{where}: {unsettled} journal row(s) not done")
            if final == once:
                if done + hermes_applied != 1:
                    problems.append(f"{where}: the entries show one application, the journal and Hermes {done}+"
                                    f"{int(hermes_applied)}")
            elif final != never or done or hermes_applied:
                problems.append(f"{where}: entries {sorted(final)} are neither applied once {sorted(once)} nor "
                                f"not applied {sorted(never)}")
            if HERMES_ADDS not in final:
                problems.append(f"{where}: Hermes' new entry was deleted")
    assert not problems, "\n".join(problems[:40])
    assert runs >= 10


def test_the_driver_serves_several_homes(hermes, tmp_path: Path) -> None:  # noqa: F811 - the fixture
    """The ``home`` field: each command lands in its own home (what the test above relies on)."""
    homes = [tmp_path / f"h{i}" for i in range(2)]
    for h in homes:
        (h / "memories").mkdir(parents=True)
    res = _drive_many(hermes, tmp_path, [{"op": "mem", "action": "add", "target": "memory", "content": f"in {h.name}",
                                          "home": str(h)} for h in homes])
    assert all(r.get("success") for r in res), res
    assert [sorted(_entries(h)) for h in homes] == [["in h0"], ["in h1"]]
    assert not (tmp_path / "driver_home" / "memories" / "MEMORY.md").exists()
