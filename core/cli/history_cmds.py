"""CLI commands of the change history: ``history``, ``revert CHANGE_ID``, ``watch [--exec CMD]``.

``history`` lists every recorded change (memdeck's and every other writer's, ``core/history/``)
newest first. ``revert`` reverses one change through the core (exit 1 with the reason when it
no longer applies or would overflow; an overflow lists the entries you could archive).
``watch`` runs headless (no TUI): it waits on the home's watcher (``core/watcher.py``) and
prints, or pipes into ``CMD`` (run once per event through the shell, the JSON line on stdin;
each run bounded by ``--exec-timeout`` and never holding up the stream: ``core/cli/exec_hook.py``,
whose ``{"event": "exec", ...}`` lines report a run that timed out, failed or was dropped),
one JSON object per line for each event:

* ``{"event": "change", ...Change.to_dict()}`` - a recorded change;
* ``{"event": "pending", "id", "action", "target", "origin", "summary", "staged_again"}`` - a new
  pending write (``staged_again``: memdeck put it back, undoing its approval or reject; ``origin``
  is still the record's own);
* ``{"event": "usage", "target", "pct", "chars", "limit"}`` - a memory file crossed 90 % usage
  upward;
* ``{"event": "audit", "session_id", "score", "alert_floor"}`` - the integrity score of a MemLock
  session fell below ``memlock.alert_floor`` (percent 0-100);
* ``{"event": "frozen", "session_id", "source", "differences", "frozen_at", "new_session", "changes"}``
  - an open session's frozen memory now differs from the files by more entries than before
  (it appeared, or grew): that running agent does not see them until a new session
  (``core/context/``);
* ``{"event": "delivered", "session_id", "target", "change", "entry_hash", "mode", "turn", "turn_id",
  "at"}`` - live memory delivered a memory change to a running session (a row the plugin recorded
  in memdeck.db ``live_deliveries``, ``core/live_memory/record.py``; ``turn``: the session's user
  turn number, ``turn_id``: Hermes' id or null, ``at``: epoch seconds). Rows already there when
  ``watch`` starts are not events.
* ``{"event": "constraint_lost" | "constraint_weakened" | "constraint_promoted", "session_id",
  "compaction_id", "at", "count", "items": [{"rule", "summary_line", "source_turn_id", "scope"}]}``
  - a new compaction of the live session lost, weakened or promoted rules the user gave (one
  event per verdict present; the keyword ledger, ``core/constraints``).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as _dt
import sys
import time
from typing import Any

from .. import history as _history
from ..errors import MemdeckError, Refused
from ..hermes_version import HermesVersion
from ..home import TARGETS
from ..memory.pending import list_pending
from ..memory.reader import read_memory
from ..watcher import DECK
from .common import CliContext, UsageError, print_json
from .exec_hook import DEFAULT_RUN_TIMEOUT, ExecHook, json_line
from .memory_cmds import _clock, _refused, safe

#: usage (percent 0-100) whose upward crossing ``watch`` reports
USAGE_ALERT_PCT = 90


def parse_since(text: str) -> float:
    """``--since``: epoch seconds, an ISO 8601 date/time (local time when naive), or a relative
    age ``<n>s|m|h|d`` (e.g. ``2h``). Raises UsageError otherwise."""
    t = text.strip()
    try:
        return float(t)
    except ValueError:
        pass
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    if len(t) > 1 and t[-1] in units and t[:-1].replace(".", "", 1).isdigit():
        return time.time() - float(t[:-1]) * units[t[-1]]
    try:
        return _dt.datetime.fromisoformat(t).timestamp()
    except ValueError:
        raise UsageError(f"--since takes epoch seconds, an ISO date/time or an age like 2h, got {text!r}") from None


def _who(c: _history.Change) -> str:
    a = c.attribution
    if "journal_id" in a:
        return f"{c.actor} (memdeck #{a['journal_id']} {a.get('op', '')})"
    if c.actor == "hermes":
        return f"hermes ({a.get('source') or '?'} session {a.get('session_id')})"
    if c.actor == "pending":
        return f"pending {a.get('pending_id')} ({a.get('origin') or '?'})"
    return c.actor


def _window(since: float | None, until: float) -> str:
    """``2026-07-23 16:25:05 .. 16:30:00``: the window in which a change happened, local time; the
    end carries its date too when it falls on another day than the start (or the start is
    unknown), so a window across midnight never reads as going backwards."""
    end = _clock(until, "%Y-%m-%d %H:%M:%S")
    if not since:
        return f"? .. {end}"
    start = _clock(since, "%Y-%m-%d %H:%M:%S")
    return f"{start} .. {end[11:] if start[:10] == end[:10] else end}"


def _show(c: _history.Change) -> None:
    rev = f"  (reverted by journal #{c.reverted_by})" if c.reverted_by else ""
    print(f"#{c.change_id:<6} {_window(c.since, c.until)}  {c.op:15} {c.kind}:{c.where}  {_who(c)}{rev}")
    if c.kind == "anchor":  # field by field, in words: never the JSON the history stores (issue 22 #12)
        for line in _history.anchor_field_lines(c.before, c.after):
            print(f"    {safe(line, one_line=True, width=160)}")
        return
    if c.before is not None:
        print(f"    - {safe(c.before, one_line=True, width=100)}")
    if c.after is not None:
        print(f"    + {safe(c.after, one_line=True, width=100)}")


def _history_cmd(args: argparse.Namespace, ctx: CliContext) -> int:
    if args.limit < 1:
        raise UsageError("--limit must be at least 1")
    since = parse_since(args.since) if args.since else None
    _history.reattribute(ctx.home)
    rows = _history.list_changes(ctx.home, target=args.target, session_id=args.session, scope=args.scope, since=since,
                                 limit=args.limit)
    if args.json:
        print_json([r.to_dict() for r in rows])
        return 0
    if not rows:
        print("no changes recorded yet")
    for r in rows:
        _show(r)
    return 0


def _revert(args: argparse.Namespace, ctx: CliContext) -> int:
    cid = args.change_id.lstrip("#")
    if not cid.isdigit():
        raise UsageError(f"CHANGE_ID is a number (see `memdeck history`), got {args.change_id!r}")
    try:
        res = _history.revert(ctx.home, ctx.config, int(cid), actor=ctx.actor)
    except Refused as exc:
        return _refused(exc, args.json)
    if res.get("warning"):
        print(f"memdeck: warning: {res['warning']}", file=sys.stderr)
    if args.json:
        print_json(res)
    else:
        print(res["message"] + f" (journal #{res['journal_id']})")
    return 0


# -- watch ------------------------------------------------------------------------------------
class _Watch:
    """The state ``watch`` compares against: pending ids, usage percents, audit alerts."""

    def __init__(self, ctx: CliContext, settings: Any = None) -> None:
        from ..overview.alerts import AlertSettings

        self.ctx = ctx
        self.settings = settings if settings is not None else AlertSettings()
        self.pending = {p.id for p in list_pending(ctx.home)}
        self.pct = self._pcts()
        self.low = self._low_sessions()
        self._db: Any = None
        self._prompts: Any = None
        self.frozen = {d["session_id"]: d["differences"] for d in self._frozen()}
        self.delivered = {(d.session_id, d.key) for d in self._deliveries()}
        self.provider = self._provider_watch()
        self.compactions = self._live_compactions()
        now = time.time()
        # records already past the age when watch starts are a state, not an event (as every alert)
        self.aged = {i.id for i in self._queue() if (i.age(now) or 0) >= self.settings.pending_age_s}

    def _version(self) -> HermesVersion:
        from ..sessions.profile import home_version

        return home_version(self.ctx.home)

    def _provider_watch(self) -> Any:
        """What the provider alerts compare (``core/overview/alerts.py`` ``ProviderWatch``) for the
        live session: its injected turns and the provider's share of its compaction budget."""
        from ..context.budget import budget
        from ..context.report import provider_share, session_injected
        from ..overview.alerts import ProviderWatch
        from ..provider_settings import configured_provider

        version = self._version()
        name = configured_provider(self.ctx.config, version)
        if name is None or not self._frozen_db():
            return ProviderWatch(provider=name)
        live = self._db.live_session()
        if live is None:
            return ProviderWatch(provider=name)
        inj = session_injected(self._db, self.ctx.config, live.id, version)
        share = provider_share(inj, budget(self.ctx.config, self.ctx.home.path, getattr(live, "model", None), version))
        return ProviderWatch(live.id, name, inj.quiet_turns(), share)

    def _live_compactions(self) -> set[tuple[str, int]]:
        """``{(session id, compaction index)}`` of the live session's compactions in state.db
        (empty without a readable state.db or a live session)."""
        if not self._frozen_db():
            return set()
        live = self._db.live_session()
        if live is None:
            return set()
        return {(e.session_id, int(e.index)) for e in self._db.compactions(live.id)}

    def constraint_events(self) -> list[dict[str, Any]]:
        """``constraint_lost`` / ``constraint_weakened`` / ``constraint_promoted`` events of the live
        session's compactions since the last look (the keyword ledger: milliseconds)."""
        from ..constraints.ledger import session_ledger

        now = self._live_compactions()
        new = sorted(now - self.compactions, key=lambda k: k[1])
        self.compactions |= now
        out: list[dict[str, Any]] = []
        for sid, index in new:
            try:
                ledger = session_ledger(self._db, self.ctx.home, self.ctx.config, sid, compaction=index, semantic=False)
            except Exception:  # noqa: BLE001 - an unreadable compaction is no event; the next look tries the next one
                continue
            for comp in ledger["compactions"]:
                for verdict in ("lost", "weakened", "promoted"):
                    items = [i for i in comp["items"] if i["verdict"] == verdict]
                    if items:
                        out.append({"event": f"constraint_{verdict}", "session_id": sid,
                                    "compaction_id": comp["compaction_id"], "at": comp["at"], "count": len(items),
                                    "items": [{k: i[k] for k in ("rule", "summary_line", "source_turn_id", "scope")}
                                              for i in items]})
        return out

    def _frozen_db(self) -> bool:
        """Open (once) and check the home's state.db; False when there is none or it is unreadable."""
        from ..context.prompts import PromptCache
        from ..sessions.statedb import StateDB

        if not self.ctx.home.state_db.exists():
            return False
        if self._db is None:
            self._db, self._prompts = StateDB(self.ctx.home.state_db), PromptCache()
        self._db.reopen_if_replaced()
        return bool(self._db.status().ok)

    def _queue(self) -> list[Any]:
        from ..memory.review import review_queue

        return [i for i in review_queue(self.ctx.home, self.ctx.config) if i.record.staged_by is None]

    def age_deadline(self) -> float | None:
        """Epoch seconds at which the next pending write passes ``pending_age_hours`` (None: none will)."""
        limit = self.settings.pending_age_s
        times = [i.record.created_at + limit for i in self._queue() if i.id not in self.aged and i.record.created_at]
        return min(times) if times else None

    def age_events(self, now: float | None = None) -> list[dict[str, Any]]:
        """``pending_age`` events of the records that passed the age since the last look."""
        from ..overview.alerts import pending_age_of

        now = time.time() if now is None else now
        out = []
        items = self._queue()
        for i in items:
            age = i.age(now)
            if age is not None and age >= self.settings.pending_age_s and i.id not in self.aged:
                self.aged.add(i.id)
                a = pending_age_of(i, age, self.settings)
                out.append({"event": "pending_age", "message": a.message, **a.data})
        self.aged &= {i.id for i in items}
        return out

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def _frozen(self) -> list[dict[str, Any]]:
        """Every open session's frozen memory against the files (``core/context``); ``[]`` without a
        readable state.db."""
        from ..context.prompts import PromptCache
        from ..context.report import disk_entries, open_session_diffs, verdict_for
        from ..sessions.profile import home_version
        from ..sessions.statedb import StateDB

        if not self.ctx.home.state_db.exists():
            return []
        if self._db is None:
            self._db, self._prompts = StateDB(self.ctx.home.state_db), PromptCache()
        self._db.reopen_if_replaced()
        if not self._db.status().ok:
            return []
        version = home_version(self.ctx.home)
        diffs = open_session_diffs(self._db, self.ctx.config, self._prompts, disk_entries(self.ctx.home),
                                   verdict_for(version))
        return [d.to_dict() for d in diffs if d.frozen.in_prompt]

    def _deliveries(self) -> list[Any]:
        from ..live_memory.record import load_recorded

        return load_recorded(self.ctx.home, "delivered")

    def delivered_events(self) -> list[dict[str, Any]]:
        """``delivered`` events of the rows recorded since the last look (oldest first)."""
        out: list[dict[str, Any]] = []
        for d in self._deliveries():
            if (d.session_id, d.key) not in self.delivered:
                self.delivered.add((d.session_id, d.key))
                out.append({"event": "delivered", "session_id": d.session_id, "target": d.target,
                            "change": d.change, "entry_hash": d.key, "mode": d.mode, "turn": d.turn,
                            "turn_id": d.turn_id, "at": d.at})
        return out

    def _pcts(self) -> dict[str, int]:
        return {t: read_memory(self.ctx.home, self.ctx.config, t).pct for t in TARGETS}

    def _low_sessions(self) -> dict[str, int]:
        from ..anchors.store import AnchorStore

        floor = self.ctx.config.memlock.alert_floor
        out: dict[str, int] = {}
        store = AnchorStore(self.ctx.home, self.ctx.config)
        try:
            infos = store.list_sessions()
        except MemdeckError:  # memlock/ cannot be listed: no alert can be told, none is invented
            return out
        for info in infos:
            if info.error:
                continue
            try:
                score = store.load_session(info.session_id).integrity_score
            except Exception:  # noqa: BLE001 - an unreadable file is no alert
                continue
            if score is not None and 0 <= score < floor:
                out[info.session_id] = int(score)
        return out

    def events(self, kinds: frozenset[str]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if kinds & {"memory", "memlock"}:
            for c in _history.observe(self.ctx.home):
                out.append({"event": "change", **c.to_dict()})
        if "pending" in kinds:
            from ..deck.db import load_decided_pending

            now = list_pending(self.ctx.home)
            again = load_decided_pending(self.ctx.home, [p.id for p in now if p.id not in self.pending])
            for p in now:
                if p.id not in self.pending:
                    out.append({"event": "pending", "id": p.id, "action": p.action, "target": p.target,
                                "origin": p.origin, "summary": p.summary, "staged_again": p.id in again})
            self.pending = {p.id for p in now}
        if "memory" in kinds:
            pct = self._pcts()
            for t in TARGETS:
                if self.pct.get(t, 0) < USAGE_ALERT_PCT <= pct[t]:
                    m = read_memory(self.ctx.home, self.ctx.config, t)
                    out.append({"event": "usage", "target": t, "pct": m.pct, "chars": m.chars, "limit": m.limit})
            self.pct = pct
        if kinds & {"memory", "statedb", "config"}:
            seen: dict[str, int] = {}
            for d in self._frozen():
                sid, n = d["session_id"], d["differences"]
                seen[sid] = n
                if n > self.frozen.get(sid, 0):
                    out.append({"event": "frozen", **{k: d[k] for k in (
                        "session_id", "source", "differences", "frozen_at", "new_session", "changes")}})
            self.frozen = seen
        if kinds & {"statedb", "config"}:
            from ..overview.alerts import provider_changes

            now_w = self._provider_watch()
            for a in provider_changes(self.provider, now_w, self.settings):
                out.append({"event": a.kind, "message": a.message, **a.data})
            self.provider = now_w
        if "statedb" in kinds:
            out.extend(self.constraint_events())
        if "pending" in kinds:
            out.extend(self.age_events())
        if "memlock" in kinds:
            low = self._low_sessions()
            for sid, score in low.items():
                if sid not in self.low or self.low[sid] != score:
                    out.append({"event": "audit", "session_id": sid, "score": score,
                                "alert_floor": self.ctx.config.memlock.alert_floor})
            self.low = low
        if DECK in kinds:
            out.extend(self.delivered_events())
        return out


def _print_line(event: dict[str, Any]) -> None:
    sys.stdout.write(json_line(event) + "\n")
    sys.stdout.flush()


def _emit(event: dict[str, Any], hook: ExecHook | None) -> None:
    """Print the event's JSON line, or hand it to the ``--exec`` hook (which never waits)."""
    if hook is None:
        _print_line(event)
    else:
        hook.submit(event, json_line(event))


async def _watch_loop(ctx: CliContext, hook: ExecHook | None, max_events: int | None, ready: bool,
                      settings: Any = None) -> None:
    """Events until ``max_events`` (or forever). Besides file events, the age of a pending write
    passes with no event at all: the loop wakes at that moment (:meth:`_Watch.age_deadline`), no
    polling. The generator's next step is one task kept across such wake-ups (cancelling it
    would end the generator)."""
    from ..watcher import watch_home

    w = _Watch(ctx, settings)
    try:
        sent = 0
        for c in _history.observe(ctx.home):  # what changed while nothing watched
            _emit({"event": "change", **c.to_dict()}, hook)
            sent += 1
        if max_events is not None and sent >= max_events:
            return

        def armed() -> None:
            if ready:
                _print_line({"event": "ready"})

        agen = watch_home(ctx.home, armed, deck=True)  # events() only reads memdeck.db on a DECK wake-up
        step: asyncio.Future[Any] | None = None
        try:
            while True:
                deadline = w.age_deadline()
                wait = None if deadline is None else max(0.0, deadline - time.time()) + 0.01
                if step is None:
                    step = asyncio.ensure_future(agen.__anext__())
                done, _ = await asyncio.wait({step}, timeout=wait)
                if step in done:
                    try:
                        kinds = step.result()
                    except StopAsyncIteration:
                        return
                    step = None
                    events = w.events(kinds)
                else:
                    events = w.age_events()
                for ev in events:
                    _emit(ev, hook)
                    sent += 1
                    if max_events is not None and sent >= max_events:
                        return
        finally:
            if step is not None and not step.done():
                step.cancel()
                try:
                    await step
                except (asyncio.CancelledError, StopAsyncIteration):
                    pass
            await agen.aclose()
    finally:
        w.close()


def _alert_settings(args: argparse.Namespace) -> Any:
    """The settings file's ``alerts`` table (the TUI owns the file; None: the defaults), its
    warnings printed to stderr."""
    loader = getattr(args, "load_alert_settings", None)
    settings = loader() if callable(loader) else None
    for w in getattr(settings, "warnings", ()):
        print(f"memdeck: warning: {w}", file=sys.stderr)
    return settings


async def _watch_main(args: argparse.Namespace, ctx: CliContext, settings: Any = None) -> None:
    """The loop, then the hook's queued runs, all within ``--timeout``; on the timeout the running
    CMD's process group is killed at once (reported), so ``watch`` returns within about
    :data:`~memdeck.core.cli.exec_hook.KILL_GRACE` seconds of it."""
    hook = ExecHook(args.exec, run_timeout=args.exec_timeout, report=_print_line) if args.exec else None

    async def run() -> None:
        await _watch_loop(ctx, hook, args.max_events, args.ready, settings)
        if hook is not None:
            await hook.wait()

    try:
        if args.timeout is not None:
            await asyncio.wait_for(run(), args.timeout)
        else:
            await run()
    except TimeoutError:
        pass
    finally:
        if hook is not None:
            await hook.close()


def _watch(args: argparse.Namespace, ctx: CliContext) -> int:
    if args.timeout is not None and args.timeout <= 0:
        raise UsageError("--timeout must be more than 0 seconds")
    if args.exec_timeout <= 0:
        raise UsageError("--exec-timeout must be more than 0 seconds")
    if args.max_events is not None and args.max_events < 1:
        raise UsageError("--max-events must be at least 1")
    asyncio.run(_watch_main(args, ctx, _alert_settings(args)))
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # noqa: SLF001
    p = sub.add_parser("history", help="every recorded change to memory and anchors, by any writer, newest first")
    p.add_argument("--target", default=None, choices=("memory", "user"), help="only changes to MEMORY.md or USER.md")
    p.add_argument("--session", default=None, metavar="SESSION_ID",
                   help="only anchor changes in this MemLock session's file")
    p.add_argument("--scope", default=None, choices=("session", "global"),
                   help="only anchor changes in session files (session) or global pins in persist/ (global)")
    p.add_argument("--since", default=None, help="only changes seen after this (epoch s, ISO date/time or e.g. 2h)")
    p.add_argument("--limit", type=int, default=50, help="at most this many changes (default 50)")
    p.add_argument("--json", action="store_true", help="print the changes as JSON")
    p.set_defaults(handler=_history_cmd)

    p = sub.add_parser("revert", help="reverse one change of the history (locked, checked, journaled)")
    p.add_argument("change_id", metavar="CHANGE_ID")
    p.add_argument("--json", action="store_true", help="print the result (or the refusal) as JSON")
    p.set_defaults(handler=_revert)

    p = sub.add_parser("watch", help="headless: print (or --exec) one JSON line per change, pending write, "
                       "90%% usage crossing, low integrity score and running session that no longer sees the files",
                       description="Also: a memory provider that injected nothing for alerts.provider_quiet_turns turns "
                       "or takes more than alerts.provider_budget_pct % of the compaction budget, and the oldest "
                       "pending write waiting past alerts.pending_age_hours. These three come from the [alerts] table "
                       "of the dashboard's settings file (memdeck --help names the file in use; --config FILE or "
                       "MEMDECK_CONFIG name another): provider_quiet_turns = 3 (user turns, at least 1), "
                       "provider_budget_pct = 20 (percent of the tokens Hermes compacts at), pending_age_hours = 24 "
                       "(hours); a missing key or file keeps its default, an unusable value keeps its default with "
                       "a warning on stderr.")
    p.add_argument("--exec", metavar="CMD", default=None,
                   help="run CMD (shell) per event with the JSON line on stdin, one run at a time in its own process "
                        "group; a run that fails or passes --exec-timeout is reported as an {\"event\": \"exec\"} line")
    p.add_argument("--exec-timeout", type=float, default=DEFAULT_RUN_TIMEOUT, metavar="SECONDS",
                   help=f"kill a run of CMD (its whole process group) after this many seconds "
                        f"(default {DEFAULT_RUN_TIMEOUT:g})")
    p.add_argument("--max-events", type=int, default=None, help="stop after this many events")
    p.add_argument("--timeout", type=float, default=None,
                   help="stop after this many seconds (a running CMD is killed; exit 0)")
    p.add_argument("--ready", action="store_true", help="print {\"event\": \"ready\"} once the watcher is armed")
    p.set_defaults(handler=_watch)
