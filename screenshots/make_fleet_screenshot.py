"""Regenerate ``screenshots/fleet.svg``: the real fleet screen (``memdeck.tui.fleet.FleetApp``) on a
Hermes root with seven profiles built from the demo home (seed 7, ``DEMO_NOW``) in different states,
plus two remote homes whose hosts do not resolve: one with earlier data (shown stale with ssh's
error, the cursor on it), one never read. Fixed clock, UTC, no watchers, headless at 200x20.

    python screenshots/make_fleet_screenshot.py [--out screenshots/fleet.svg]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ["TEXTUAL_ANIMATIONS"] = "none"
os.environ["TZ"] = "UTC"
if hasattr(time, "tzset"):
    time.tzset()

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from memdeck.core.demo import DEMO_NOW, build_demo_home  # noqa: E402

DELIM = "\n§\n"


def _keep_entries(home: Path, target: str, n: int) -> None:
    md = home / "memories" / ("MEMORY.md" if target == "memory" else "USER.md")
    md.write_text(DELIM.join(md.read_text(encoding="utf-8").split(DELIM)[:n]), encoding="utf-8")


def _no_pending(home: Path, keep: int = 0) -> None:
    for f in sorted((home / "pending" / "memory").glob("*.json"))[keep:]:
        f.unlink()


def _hand_edit(home: Path, when: float) -> None:
    """A change memdeck did not make (an editor), recorded by the change history at ``when``."""
    from memdeck.core.history import observe
    from memdeck.core.home import HermesHome

    h = HermesHome(home)
    observe(h, now=when - 3600)  # the history's first look
    md = home / "memories" / "USER.md"
    md.write_text(md.read_text(encoding="utf-8") + DELIM + "Prefers metric units.", encoding="utf-8")
    observe(h, now=when)


def build(tmp: Path) -> Path:
    template = build_demo_home(tmp / "template", seed=7, now=DEMO_NOW).path
    root = tmp / "hermes"
    shutil.copytree(template, root, symlinks=True)
    for name in ("work", "research", "gateway-tg", "support", "cron", "sandbox"):
        shutil.copytree(template, root / "profiles" / name, symlinks=True)
    p = root / "profiles"
    _keep_entries(p / "work", "memory", 12)
    _keep_entries(p / "work", "user", 9)
    _no_pending(p / "work", keep=1)
    _keep_entries(p / "research", "memory", 5)
    _keep_entries(p / "research", "user", 4)
    _no_pending(p / "research")
    _no_pending(p / "gateway-tg")
    _keep_entries(p / "support", "memory", 14)
    _keep_entries(p / "support", "user", 10)
    _no_pending(p / "support")
    cfg = p / "support" / "config.yaml"
    cfg.write_text(cfg.read_text(encoding="utf-8").replace("memory:\n", "memory:\n  provider: honcho\n", 1), encoding="utf-8")
    _keep_entries(p / "cron", "memory", 8)
    _keep_entries(p / "cron", "user", 6)
    _no_pending(p / "cron")
    for f in (p / "cron").glob("state.db*"):
        f.unlink()
    shutil.rmtree(p / "sandbox")
    (p / "sandbox" / "memories").mkdir(parents=True)
    for name in ("research", "support"):  # no MemLock anchors there: no integrity score
        shutil.rmtree(p / name / "memlock")
        cfg = p / name / "config.yaml"
        text = cfg.read_text(encoding="utf-8")
        cfg.write_text(text[: text.index("  anchors:")] if "  anchors:" in text else text, encoding="utf-8")
    _hand_edit(p / "work", DEMO_NOW - 2 * 3600)
    _hand_edit(p / "support", DEMO_NOW - 25 * 60)
    return root


async def shoot(out: Path) -> None:
    from memdeck.core.fleet.homes import FleetSettings, fleet_homes, parse_home_spec
    from memdeck.core.fleet.last_seen import LastSeen, LastSeenStore
    from memdeck.core.fleet.rows import Fleet
    from memdeck.tui.fleet import FleetApp

    tmp = Path(tempfile.gettempdir()) / "memdeck-fleet"  # fixed: the paths on screen are the same on every run
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        root = build(tmp)
        clock = lambda: float(DEMO_NOW)  # noqa: E731
        store = LastSeenStore(tmp / "cache")
        stale = parse_home_spec("ssh://ops@box-2.invalid/home/ops/.hermes")
        never = parse_home_spec("ssh://ops@box-3.invalid/srv/hermes")
        # the stale host's earlier data: what a read of the research profile gave ten minutes ago
        seed = Fleet(fleet_homes(None, FleetSettings(), explicit=root / "profiles" / "research"), clock=clock)
        (row,) = seed.read(via_status=True)
        seed.close()
        from dataclasses import replace

        store.save(stale.address, LastSeen(DEMO_NOW - 600, replace(row.figures, home=stale.path), dict(row.view or {})))
        homes = fleet_homes(None, FleetSettings(), explicit=root) + [stale, never]
        fleet = Fleet(homes, FleetSettings(ssh_command=("ssh", "-F", "/dev/null")), last_seen=store, clock=clock)
        fleet.refresh_remote()
        app = FleetApp(fleet, watch=False, clock=clock)
        async with app.run_test(size=(200, 20)) as pilot:
            while app.refresh_count < 1 or not app.idle:
                await pilot.pause(0.02)
            # the cursor on the stale remote row: the line under the table says why it is stale
            table = app.query_one("#fleet-table")
            table.move_cursor(row=next(i for i, r in enumerate(app.rows) if r.stale))
            await pilot.pause()
            await pilot.pause()
            app.save_screenshot(str(out.name), path=str(out.parent))
        fleet.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=ROOT / "screenshots" / "fleet.svg")
    args = ap.parse_args()
    asyncio.run(shoot(args.out.resolve()))
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
