"""Regenerate the README's pictures (``screenshots/*.svg``) from the demo home.

    python screenshots/make_screenshots.py [--out DIR] [--only NAME ...]

Every picture is the real app (``memdeck.tui.app.make_app``) on the deterministic demo home (seed 7,
``memdeck.core.demo.DEMO_NOW``) with a fixed clock, UTC, animations off and no file watchers, run
headless at a fixed terminal size with ``App.run_test(size=...)`` and saved with
``App.save_screenshot``. Re-running it on an unchanged tree gives the same pictures.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

# Before Textual is imported: no animations, no cursor blink differences, a fixed zone.
os.environ["TEXTUAL_ANIMATIONS"] = "none"
os.environ["TZ"] = "UTC"
if hasattr(time, "tzset"):
    time.tzset()

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from memdeck.core.demo import DEMO_NOW, DEMO_SEED, build_demo_home  # noqa: E402

#: Where the pictures' demo home is built (wiped and rebuilt on each run; shown in the status line).
DEMO_PATH = Path(tempfile.gettempdir()) / "memdeck-demo"


#: Where the long session's home is built (the demo home, then :data:`LONG_COMPACTIONS` more
#: compactions of its live session: the Integrity chart of a session compacted for days).
LONG_PATH = Path(tempfile.gettempdir()) / "memdeck-demo-long"
LONG_COMPACTIONS = 400
LONG_EVERY_S = 600.0  # ten minutes between two compactions: 400 of them span almost three days


@dataclass(frozen=True)
class Shot:
    """One picture: file stem, panel id, terminal size (columns, rows), theme, recall query,
    whether another writer (as Hermes does) replaces an entry of MEMORY.md once the panel shows,
    and whether it shows the long session's home (:func:`build_long_session_home`)."""

    name: str
    panel: str
    size: tuple[int, int] = (120, 40)
    theme: str = "textual-dark"
    query: str = ""
    external_replace: bool = False
    long_session: bool = False
    pin_text: str = ""  # open the pin dialog with this text and wait for its what-if
    stage_queue: bool = False  # stage two stale records and a provider's record, select a stale one
    layout: str = "panels"  # "overview": the one-screen layout (o, --layout overview); ``panel`` unused
    hygiene: bool = False  # a paraphrase of an entry added by hand, the Hygiene screen on its duplicate
    ledger: bool = False  # one more compaction of the live session (a rule of each kind), its constraint ledger
    cost: bool = False  # the plugin's recorded API usage of the live session, the Context panel on its last turn


SHOTS: tuple[Shot, ...] = (
    Shot("integrity", "integrity"),
    Shot("anchors", "anchors"),
    Shot("drift", "drift"),
    Shot("capacity", "capacity"),
    Shot("recall", "recall", query="deploy"),
    Shot("review", "review"),
    Shot("history", "history"),
    Shot("context", "context"),
    Shot("anchors-80x24", "anchors", size=(80, 24)),
    Shot("overview-100x30", "integrity", size=(100, 30), layout="overview"),
    Shot("overview-80x24", "integrity", size=(80, 24), layout="overview"),
    Shot("capacity-light", "capacity", theme="textual-light"),
    Shot("integrity-chart", "integrity", size=(160, 48), long_session=True),
    Shot("integrity-chart-light", "integrity", size=(120, 40), theme="textual-light", long_session=True),
    Shot("capacity-chart", "capacity", size=(160, 48)),
    Shot("pin-whatif", "anchors", size=(120, 44), pin_text="Always reply in bullet points, never paragraphs."),
    Shot("context-cost", "context", size=(120, 48), cost=True),  # it records API usage: only Context shows it
    Shot("toast", "capacity", external_replace=True),  # it changes the home: the shots below show that
    Shot("history-unseen", "history"),  # the change the toast showed, not yet seen by the running session
    Shot("review-queue", "review", stage_queue=True),  # it stages records: keep it second to last
    Shot("hygiene", "capacity", size=(130, 44), hygiene=True),  # it adds an entry
    Shot("ledger", "drift", size=(120, 40), ledger=True),  # it compacts the live session once more: keep it last
)

#: the turns and the summary of the ledger picture's compaction: a rule of each kind (issue 34)
LEDGER_TURNS = ("Let's get the 0.4 release of linkhop out today.", "Never run rm -rf on the home directory.",
                "Never force-push to main.", "Skip the linter just this once, we're in a hurry.",
                "Always use UTC timestamps in logs.", "Bump the version and tag it.", "Thanks, go on.", "And the docs?")
LEDGER_SUMMARY = """## Goal
Ship linkhop 0.4.

## Constraints & Preferences
- NEVER run rm -rf on the home directory.
- Force-pushing to main was discussed.
- Skip the linter.
- Always deploy on Tuesdays.

## Progress
- Version bumped and tagged."""


def _compact_live_session(home, session_id: str, now: float) -> None:
    """One more in-place compaction of the live session whose turns hold a rule of each kind."""
    from memdeck.core.sessions import hermes_schema as HS

    conn = HS.connect(home.state_db)
    try:
        t = now - 100.0
        for i, text in enumerate(LEDGER_TURNS):
            HS.append_message(conn, session_id, "user", text, timestamp=t + 2 * i)
            HS.append_message(conn, session_id, "assistant", "Done.", timestamp=t + 2 * i + 1)
        HS.compact_in_place(conn, session_id, LEDGER_SUMMARY, keep_head=1, keep_tail=2, now=now - 60.0)
    finally:
        conn.close()

#: what the hygiene picture adds to MEMORY.md by hand: the first demo entry said again
HYGIENE_PARAPHRASE = ("linkhop is the FastAPI URL shortener in ~/code/linkhop; make test runs its suite and make lint "
                      "runs ruff and mypy --strict.")


def build_long_session_home(path: Path, compactions: int = LONG_COMPACTIONS, seed: int = 26):
    """The demo home, then ``compactions`` more in-place compactions of its live session, one every
    :data:`LONG_EVERY_S` seconds after ``DEMO_NOW``, written with the Hermes-shaped writer
    (``core.sessions.hermes_schema``: Hermes' ``archive_and_compact``). Each summary carries the
    probe words of each anchor with a chance that wanders (a slow random walk, with a few sharp
    drops), so memdeck's audit of each compaction gives a score that moves and sometimes falls
    below the floor. Returns ``(home, the clock of the picture)``."""
    import random

    from memdeck.core.demo import demo_plan
    from memdeck.core.demo.story import ANCHORS
    from memdeck.core.sessions import hermes_schema as hs

    home = build_demo_home(path, seed=DEMO_SEED, now=DEMO_NOW)
    sid = demo_plan(DEMO_SEED, DEMO_NOW).live_session_id
    rnd = random.Random(seed)
    conn = hs.connect(home.state_db)
    t, health = DEMO_NOW + 60.0, 0.9
    try:
        for k in range(compactions):
            for i in range(6):  # a few turns between two compactions, free of every probe word
                t += LONG_EVERY_S / 8
                hs.append_message(conn, sid, "user" if i % 2 == 0 else "assistant",
                                  f"turn {k}.{i}: the {rnd.choice(('redirect', 'billing', 'export', 'webhook'))} "
                                  "job is slower on staging", timestamp=t)
            health = min(1.0, max(0.6, health + rnd.uniform(-0.05, 0.05)))
            chance = 0.1 if rnd.random() < 0.02 else health  # now and then most anchors drop out
            kept = [p for spec in ANCHORS if rnd.random() < chance for p in spec.probes]
            summary = (f"## Goal\nKeep the linkhop service healthy (pass {k + 1}).\n## Constraints\n"
                       + "\n".join(f"- {w}" for w in kept))
            t += LONG_EVERY_S / 4
            hs.compact_in_place(conn, sid, summary, keep_head=3, keep_tail=4, now=t)
    finally:
        conn.close()
    return home, t + 120.0


def _replace_first_entry(memory_md: Path) -> None:
    """Replace MEMORY.md's first entry the way Hermes writes (a temp file, then ``os.replace``)."""
    entries = memory_md.read_text(encoding="utf-8").split("\n§\n")
    entries[0] = entries[0].replace("about 40 s", "about 25 s")
    tmp = memory_md.with_name(memory_md.name + ".shot.tmp")
    tmp.write_text("\n§\n".join(entries), encoding="utf-8")
    os.replace(tmp, memory_md)


def _stage_queue(home) -> str:
    """Stage what the demo's queue lacks (issue 25): two records whose target entry is gone (stale)
    and one a memory provider put in pending/memory; returns the first stale record's id."""
    import json

    from memdeck.core.demo.changes import pending_record

    staged = (("5a1e0001", "replace", "the deploy host is fly-ams-2", "Deploy host: fly-ams-1", "background_review", 86400 * 2),
              ("5a1e0002", "replace", "linkhop's CI runs on GitHub Actions", "CI runs on Buildkite", "background_review", 7200),
              ("f0e10001", "add", "user likes tea", None, "holographic", 600))
    for pid, action, content, old, origin, age in staged:
        rec = pending_record(pid, action, "memory", content, old, origin, DEMO_NOW - age)
        (home.pending_dir / f"{pid}.json").write_text(json.dumps(rec), encoding="utf-8")
    return staged[0][0]


#: The live session's API requests as the plugin records them (issue 37): (cache read, cache write,
#: uncached input, output, messages, seconds after the first). Turn 7 follows a compaction (fewer
#: messages: the prompt was rebuilt), turn 11 comes 9 minutes after turn 10 (the cache expired).
COST_TURNS = ((0, 9_840, 35, 410, 2, 0), (9_875, 520, 41, 655, 4, 70), (10_395, 760, 38, 380, 6, 150),
              (11_155, 1_240, 52, 912, 8, 260), (12_395, 690, 44, 301, 10, 330), (13_085, 1_610, 61, 1_204, 12, 420),
              (6_120, 4_210, 47, 388, 5, 515), (10_330, 880, 39, 497, 7, 590), (11_210, 540, 36, 276, 9, 650),
              (11_750, 1_020, 58, 733, 11, 720), (0, 12_770, 42, 515, 13, 1_260), (12_770, 610, 40, 342, 15, 1_330),
              (13_380, 930, 49, 620, 17, 1_400), (14_310, 450, 37, 298, 19, 1_460))


def _record_cost(home) -> None:
    """Record :data:`COST_TURNS` for the demo's live session, as the plugin's post_api_request does."""
    from memdeck.core.deck import usage
    from memdeck.core.demo.plan import demo_plan

    sid = demo_plan(DEMO_SEED, DEMO_NOW).live_session_id
    t0 = DEMO_NOW - 1_600
    for n, (read, write, inp, out, msgs, after) in enumerate(COST_TURNS, 1):
        row = usage.from_hook({"session_id": sid, "turn_id": f"turn-{n}", "api_call_count": 1, "message_count": msgs,
                               "model": "anthropic/claude-sonnet-4.5", "provider": "openrouter",
                               "ended_at": t0 + after, "usage": {"input_tokens": inp, "output_tokens": out,
                                                                 "cache_read_tokens": read, "cache_write_tokens": write}})
        assert row is not None and usage.record(home, row)


async def _settle(pilot, app, rounds: int = 200) -> None:
    """Pump the app until the first snapshot is shown and no refresh/recall worker runs."""
    for _ in range(rounds):
        await pilot.pause()
        busy = [w for w in app.workers if w.group in ("refresh", "recall", "write", "exact") and not w.is_finished]
        for w in busy:
            await w.wait()
        await pilot.pause()
        if app.refresh_count >= 1 and not busy and not getattr(app, "_refreshing", False):
            return
    raise RuntimeError("the app did not settle")


async def take(shot: Shot, home, out: Path, now: float = DEMO_NOW) -> Path:
    """Run the app headless for ``shot`` and save its SVG to ``out/<name>.svg``."""
    from memdeck.tui.app import make_app

    stale = _stage_queue(home) if shot.stage_queue else None
    if shot.cost:
        _record_cost(home)
    if shot.hygiene:
        path = home.memory_file("memory")
        path.write_text(path.read_text(encoding="utf-8") + "\n§\n" + HYGIENE_PARAPHRASE, encoding="utf-8")
    app = make_app(home, watch=False, demo=True, now=now, layout=shot.layout)
    async with app.run_test(size=shot.size, notifications=shot.external_replace) as pilot:
        await _settle(pilot, app)
        app.theme = shot.theme
        if shot.layout != "overview":
            await app.action_show_panel(shot.panel)
        await _settle(pilot, app)
        if shot.cost:
            app.query_one("#context-table").select_key(f"c:{len(COST_TURNS)}")
            await _settle(pilot, app)
        if stale:
            row = next(r for r in app.panel("review").rows if r.ident == stale)
            app.query_one("#review-table").select_key(row.key)
            await _settle(pilot, app)
        if shot.query:
            app.query_one("#recall-query").value = shot.query
            app.run_recall(shot.query)
            await _settle(pilot, app)
        if shot.pin_text:
            from textual.widgets import TextArea

            app.action_pin()
            for _ in range(400):
                await pilot.pause()
                if getattr(app.screen, "what_if_fn", None) is not None and app.screen.is_mounted:
                    break
            app.screen.query_one("#pin-text", TextArea).text = shot.pin_text
            for _ in range(2000):
                await pilot.pause(0.01)
                key = getattr(app.screen, "_what_if_key", None)
                if app.screen.what_if_result is not None and key and key[0] == shot.pin_text:
                    break
            else:
                raise RuntimeError("the what-if did not finish")
            await pilot.pause()
        if shot.hygiene:
            from memdeck.tui.screens.hygiene import HygieneScreen

            app.action_hygiene()
            for _ in range(4000):
                await pilot.pause(0.01)
                if isinstance(app.screen, HygieneScreen) and app.screen.report is not None:
                    break
            else:
                raise RuntimeError("the hygiene report did not come")
            kinds = [f.kind for f in app.screen.report.findings]
            if "duplicate" in kinds:
                app.screen.query_one("#hygiene-table").move_cursor(row=kinds.index("duplicate"))
            await pilot.pause()
        if shot.ledger:
            from memdeck.tui.screens.constraints import ConstraintsScreen

            _compact_live_session(home, app.snapshot.session_id, now)
            app.request_refresh()
            await _settle(pilot, app)
            screen = ConstraintsScreen(app.snapshot.session_id)
            app.push_screen(screen)
            for _ in range(4000):
                await pilot.pause(0.01)
                if screen.is_mounted and screen.ledger is not None:
                    break
            else:
                raise RuntimeError("the ledger did not come")
            verdicts = [it["verdict"] for it in screen.comp["items"]] if screen.comp else []
            if not {"kept", "weakened", "lost", "promoted", "orphan"} <= set(verdicts):
                raise RuntimeError(f"the ledger picture needs a rule of each kind, got {verdicts}")
            screen.query_one("#constraints-table").move_cursor(row=verdicts.index("promoted"))
            await pilot.pause()
        if shot.external_replace:
            _replace_first_entry(home.memory_file("memory"))
            app.request_refresh()
            await _settle(pilot, app)
        await pilot.pause()
        app.save_screenshot(filename=f"{shot.name}.svg", path=str(out))
    return out / f"{shot.name}.svg"


async def main_async(out: Path, only: set[str]) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    # A fixed path: the status line shows the home's path, and the pictures must not change.
    home = build_demo_home(DEMO_PATH, seed=DEMO_SEED, now=DEMO_NOW)
    long_home = None
    for shot in SHOTS:
        if only and shot.name not in only:
            continue
        if shot.long_session:
            if long_home is None:
                long_home = build_long_session_home(LONG_PATH)
            written.append(await take(shot, long_home[0], out, now=long_home[1]))
        else:
            written.append(await take(shot, home, out))
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent, help="output directory")
    parser.add_argument("--only", nargs="*", default=[], help="picture names to regenerate (default: all)")
    args = parser.parse_args(argv)
    names = {s.name for s in SHOTS}
    unknown = set(args.only) - names
    if unknown:
        parser.error(f"unknown picture(s): {', '.join(sorted(unknown))}; known: {', '.join(sorted(names))}")
    for path in asyncio.run(main_async(args.out, set(args.only))):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
