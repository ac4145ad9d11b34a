"""Every panel of the dashboard on every hostile home (issue 22, "Make regressions impossible").

The panels are the app's own registry (``tui/keymap.py`` ``PANELS``, which ``MemdeckApp.compose``
builds its tabs from) and the homes the catalogue of ``tests/helpers/hostile.py``, so a panel or
a home added later is opened here by default. Each home is opened headless
(``make_app(..., watch=False)``, Pilot) and every panel shown in turn; then:

* no worker ended in an error, no "refresh failed" toast, no panel "failed to render";
* every panel shows a banner exactly when its snapshot says a source of it failed or was read
  only in part (``DeckSnapshot.error_for``), and the panels the home breaks (``Hostile.panels``)
  do: a broken source is a banner, never an empty or a wrong panel;
* the home's files are as they were (the dashboard writes nothing but memdeck's own files).

Each home is opened in a forked child of the suite's process, two at a time (about 3 s of CPU a
home); a home that exists only without root's permission override has its child drop it first.
A directory that is no home is refused by the launcher, as by every command.
"""

from __future__ import annotations

import asyncio
import json
import os
import select
import signal
import traceback
from pathlib import Path
from typing import Any

import pytest

from memdeck.core.home import HermesHome
from tests.helpers.hostile import (
    HOMES,
    Hostile,
    build_base,
    build_hostile,
    copy_home,
    drop_dac_override,
    fingerprint,
    holding,
    memdeck_owned,
)

#: homes opened at once (each in its own forked child)
PARALLEL = min(2, os.cpu_count() or 1)
#: seconds after which a dashboard that has not finished is killed and reported
HANG_GUARD = 300.0
#: words that only a bug puts on screen
_BUG_WORDS = ("refresh failed", "failed to render", "Traceback")


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_base(tmp_path_factory.mktemp("hostile-base") / "home")


async def _visit_every_panel(home: Path) -> dict[str, Any]:
    """Open the dashboard on ``home``, show every panel, and report what it showed."""
    from textual.worker import WorkerState

    from memdeck.tui.app import make_app
    from memdeck.tui.keymap import PANELS
    from memdeck.tui.widgets.panels.base import Banner
    from tests.tui.conftest import settle

    app = make_app(HermesHome(home), watch=False)
    worker_errors: list[str] = []
    remove = app.workers._remove_worker  # noqa: SLF001 - every worker passes here when it ends

    def record(worker: Any) -> None:
        if worker.state == WorkerState.ERROR:
            worker_errors.append(f"{worker.name}: {worker.error!r}")
        remove(worker)

    app.workers._remove_worker = record  # noqa: SLF001
    panels: dict[str, dict[str, Any]] = {}
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await settle(pilot, app)
        for pid, _title in PANELS:
            await app.action_show_panel(pid)
            await settle(pilot, app)
            assert app.current_panel_id == pid
            banners = [b for b in app.panel(pid).query(Banner)]
            shown = [str(getattr(b, "content", "")) for b in banners if b.display]
            panels[pid] = {"banner": " ".join(shown), "expected": app.snapshot.error_for(pid) if app.snapshot else None}
        toasts = [f"{n.title}: {n.message}" for n in app.notification_log]
        final = app.snapshot is not None and not app.snapshot.partial
        await pilot.press("q")
    return {"worker_errors": worker_errors, "panels": panels, "toasts": toasts, "final": final}


def _start_child(home: Path, unprivileged: bool) -> tuple[int, int]:
    """Fork a child that runs :func:`_visit_every_panel` (without root's permission override when
    ``unprivileged``) and writes its report as JSON to a pipe; returns ``(pid, read end)``."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            os.close(r)
            if unprivileged and not drop_dac_override():
                raise RuntimeError("could not drop CAP_DAC_OVERRIDE")
            report = asyncio.run(_visit_every_panel(home))
        except BaseException:  # noqa: BLE001 - reported to the parent
            report = {"crash": traceback.format_exc()}
        data = json.dumps(report).encode()
        while data:
            data = data[os.write(w, data):]
        os._exit(0)
    os.close(w)
    return pid, r


def _collect(pid: int, r: int) -> dict[str, Any]:
    chunks = []
    while chunk := os.read(r, 1 << 16):
        chunks.append(chunk)
    os.close(r)
    os.waitpid(pid, 0)
    return json.loads(b"".join(chunks) or b'{"crash": "the child reported nothing"}')


@pytest.fixture(scope="module")
def reports(request: pytest.FixtureRequest, base: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The dashboard's report on every hostile home this session runs, two homes at a time (each
    in a forked child: the suite's process is single-threaded, the second core opens the next
    home meanwhile), with each home's files before and after."""
    wanted = [item.callspec.params["hostile"] for item in request.session.items
              if item.module is request.module and hasattr(item, "callspec")]
    root = tmp_path_factory.mktemp("hostile-panels")
    queue = [h for h in wanted if h.source != "home"]
    out: dict[str, Any] = {}
    running: dict[int, tuple[Hostile, int, Path, Any, Any, dict]] = {}
    try:
        while queue or running:
            while queue and len(running) < PARALLEL:
                h = queue.pop(0)
                template = build_hostile(h, base, root / f"{h.name}-template")
                before = (fingerprint(template), h.frozen_in(template))
                home = copy_home(template, root / h.name)
                server = holding(h)
                server.__enter__()
                hold = server.hold(home)
                hold.__enter__()
                pid, r = _start_child(home, h.unprivileged)
                running[r] = (h, pid, home, server, hold, before)
            ready, _, _ = select.select(list(running), [], [], HANG_GUARD)
            if not ready:
                for h, pid, *_rest in running.values():
                    os.kill(pid, signal.SIGKILL)
                    out[h.name] = {"crash": f"the dashboard did not finish within {HANG_GUARD:g} s"}
                ready = list(running)
            for r in ready:
                h, pid, home, server, hold, before = running.pop(r)
                report = _collect(pid, r)
                hold.__exit__(None, None, None)
                server.__exit__(None, None, None)
                report["before"], report["frozen"] = before
                report["after"] = fingerprint(home)
                out.setdefault(h.name, report)
    finally:
        for _h, pid, _home, server, hold, _b in running.values():
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            hold.__exit__(None, None, None)
            server.__exit__(None, None, None)
    return out


@pytest.mark.parametrize("hostile", HOMES, ids=[h.name for h in HOMES])
def test_every_panel_on_a_hostile_home(hostile: Hostile, base: Path, tmp_path: Path, reports: dict[str, Any]) -> None:
    if hostile.source == "home":  # the launcher refuses it before any dashboard exists
        import argparse

        from memdeck.core.cli.common import NoHome
        from memdeck.tui.launch import resolve_dashboard_home

        template = build_hostile(hostile, base, tmp_path / "template")
        with pytest.raises(NoHome):
            resolve_dashboard_home(argparse.Namespace(home=str(template), profile=None, demo=False))
        return
    report = reports[hostile.name]
    assert "crash" not in report, report.get("crash")
    problems = [f"worker error: {e}" for e in report["worker_errors"]]
    problems += [f"toast: {t}" for t in report["toasts"] if any(w in t for w in _BUG_WORDS)]
    if not report["final"]:
        problems.append("the dashboard never showed a full snapshot")
    for pid, seen in report["panels"].items():
        if any(w in seen["banner"] for w in _BUG_WORDS):
            problems.append(f"{pid}: {seen['banner'][:300]}")
        if bool(seen["banner"]) != bool(seen["expected"]):
            problems.append(f"{pid}: banner {seen['banner'][:200]!r} but the snapshot says {seen['expected']!r}")
    for pid in hostile.panels:
        if not report["panels"][pid]["banner"]:
            problems.append(f"{pid}: no banner, though this home breaks a source it shows")
    before, after = report["before"], report["after"]
    changed = [rel for rel in sorted(before.keys() | after.keys()) if before.get(rel) != after.get(rel)
               and (not memdeck_owned(rel) or rel in report["frozen"])]
    if changed:
        problems.append(f"the dashboard changed {changed}")
    assert not problems, f"{hostile.name}:\n" + "\n".join(problems)
