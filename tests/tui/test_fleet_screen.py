"""The fleet screen (tui/fleet.py): rows by attention, a watcher per local home that reads only the
home that changed, a remote row that failed shown as a row, enter handing the terminal over."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from memdeck.core.fleet.homes import FleetSettings, fleet_homes, parse_home_spec
from memdeck.core.fleet.rows import Fleet
from memdeck.core.home import HermesHome
from memdeck.tui.fleet import FleetApp
from memdeck.tui.messages import FleetRowsReady
from tests.helpers.demo import demo_home_template  # noqa: F401 - fixture
from tests.helpers.fleet import fleet_root, free_port
from tests.tui.conftest import wait_for


@pytest.fixture
def root(demo_home_template: HermesHome, tmp_path: Path) -> Path:  # noqa: F811
    r = fleet_root(demo_home_template.path, tmp_path / "root", 3)
    (r / "profiles" / "p02" / "pending" / "memory").mkdir(parents=True, exist_ok=True)
    for f in (r / "profiles" / "p02" / "pending" / "memory").glob("*.json"):
        f.unlink()  # p02: no pending writes
    return r


class Recorder(FleetApp):
    def __init__(self, *a, **kw) -> None:
        super().__init__(*a, **kw)
        self.reads: list[object] = []
        self.toasts: list[str] = []

    def on_fleet_rows_ready(self, message: FleetRowsReady) -> None:
        self.reads.append(message.local)
        super().on_fleet_rows_ready(message)

    def notify(self, message, **kw) -> None:  # type: ignore[override]
        self.toasts.append(str(message))
        super().notify(message, **kw)


@pytest.mark.anyio
async def test_rows_by_attention_and_an_unreachable_host_as_a_row(root: Path, tmp_path: Path) -> None:
    down = parse_home_spec(f"ssh://root@127.0.0.1:{free_port()}/srv/x")
    fleet = Fleet(fleet_homes(None, FleetSettings(), explicit=root) + [down], FleetSettings(connect_timeout=3))
    fleet.refresh_remote()
    app = Recorder(fleet, watch=False, clock=lambda: 1_800_000_000.0)
    try:
        async with app.run_test(size=(160, 30)) as pilot:
            await wait_for(pilot, lambda: app.refresh_count >= 1 and app.idle)
            table = app.query_one("#fleet-table")
            assert table.keys == [r.home.address for r in app.rows]
            levels = [r.attention.level for r in app.rows]
            assert levels == sorted(levels, reverse=True) and len(app.rows) == 4
            row = next(r for r in app.rows if r.home.remote)
            cells = [c.plain for c in table.cells(row.home.address)]
            assert "error" in cells and row.figures is None and "refused" in (row.error or "")
            table.move_cursor(row=app.rows.index(row))
            await pilot.pause()
            detail = app.query_one("#fleet-detail").render()
            assert "refused" in str(detail)
            quiet = next(r for r in app.rows if r.home.profile == "p02")
            from memdeck.core.fleet.columns import COLUMNS

            pending_col = [k for k, _ in COLUMNS].index("pending")
            assert table.cells(quiet.home.address)[pending_col].plain == "0"  # none waits
    finally:
        fleet.close()


@pytest.mark.anyio
async def test_a_change_reads_only_that_home_again(root: Path) -> None:
    fleet = Fleet(fleet_homes(None, FleetSettings(), explicit=root))
    app = Recorder(fleet, watch=True)
    try:
        async with app.run_test(size=(160, 30)) as pilot:
            await wait_for(pilot, lambda: app.refresh_count >= 1 and app.idle)
            p01 = str(root / "profiles" / "p01")
            before = next(r for r in app.rows if r.home.address == p01).figures.pending
            builds = {a: r.builds for a, r in fleet._readers.items()}
            # the watchers arm on mount: a change now is seen by p01's watcher only
            await wait_for(pilot, lambda: len(app.watching) == 3)
            next((root / "profiles" / "p01" / "pending" / "memory").glob("*.json")).unlink()
            await wait_for(pilot, lambda: next(r for r in app.rows if r.home.address == p01).figures.pending == before - 1,
                           describe=lambda: app.reads)
            assert {p01} in app.reads  # that home alone was read again
            after = {a: r.builds for a, r in fleet._readers.items()}
            assert after[p01] == builds[p01] + 1
            assert all(after[a] == builds[a] for a in after if a != p01)
            await pilot.press("q")
    finally:
        fleet.close()


@pytest.mark.anyio
async def test_enter_hands_the_terminal_to_the_home_s_dashboard(root: Path) -> None:
    remote = parse_home_spec("ssh://ops@box-2:2222/home/ops/.hermes")
    fleet = Fleet(fleet_homes(None, FleetSettings(), explicit=root) + [remote])
    ran: list[list[str]] = []
    app = Recorder(fleet, watch=False, runner=lambda argv: ran.append(list(argv)) or 0)
    try:
        async with app.run_test(size=(160, 30)) as pilot:
            await wait_for(pilot, lambda: app.refresh_count >= 1 and app.idle)
            table = app.query_one("#fleet-table")
            # headless: the terminal cannot be handed over, the toast says what to run
            table.move_cursor(row=next(i for i, r in enumerate(app.rows) if r.home.profile == "p01"))
            await pilot.press("enter")
            await pilot.pause()
            assert ran == [] and any("--home" in t and "p01" in t for t in app.toasts)
            app.suspend = lambda: contextlib.nullcontext()  # type: ignore[method-assign]
            await pilot.press("enter")
            await wait_for(pilot, lambda: len(ran) == 1)
            assert ran[0][1:] == ["-m", "memdeck.tui", "--home", str(root / "profiles" / "p01")]
            table.move_cursor(row=next(i for i, r in enumerate(app.rows) if r.home.remote))
            await pilot.press("enter")
            await wait_for(pilot, lambda: len(ran) == 2)
            ssh = ran[1]
            assert ssh[0] == "ssh" and ssh[1] == "-t" and "BatchMode=yes" not in ssh
            assert ssh[-2:] == ["ops@box-2", "memdeck --home /home/ops/.hermes"] and "2222" in ssh
            assert any(a.startswith("ControlPath=") for a in ssh)  # over the shared connection
    finally:
        fleet.close()
