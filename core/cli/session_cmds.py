"""``memdeck sessions`` and ``memdeck recall``: read-only views of state.db; ``memdeck sessions
rebuild SID`` queues a rebuild of one running session's system prompt (memdeck.db only: the plugin,
inside the agent's process, asks Hermes to rebuild it at that session's next turn).

Exit codes: 0 success (also when the database is missing: the status line says so), 1 refused, 2 usage.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import sys

from ..sessions.recall import recall
from ..sessions.statedb import StateDB
from ..text import visible as _visible
from .common import CliContext, print_json


def _when(ts: float | None) -> str:
    if ts is None:
        return "-"
    try:
        return _dt.datetime.fromtimestamp(float(ts)).strftime("%Y-%m-%d %H:%M")
    except (OverflowError, OSError, ValueError):
        return str(ts)


def _stale(args: argparse.Namespace, ctx: CliContext) -> int:
    from .context_cmds import stale_sessions

    with StateDB(ctx.home.state_db) as db:
        st = db.status()
        rows = stale_sessions(ctx, db) if st.ok else []
    if args.limit is not None:
        rows = rows[:args.limit]
    if args.json:
        from ..live_memory.settings import live_settings

        print_json({"state_db": st.as_dict(), "live_memory": live_settings(ctx.config.raw).to_dict(), "sessions": rows})
        return 0
    if not st.ok:
        print(f"state.db: {st.state}: {st.message}", file=sys.stderr)
        return 0
    if not rows:
        print("no open session")
        return 0
    print(f"{'id':<24} {'source':<10} {'frozen':<16} {'differ':>6}")
    for r in rows:
        differ = f"{r['differences']:>6}" if r["in_prompt"] else f"{'-':>6}"
        why = "" if r["in_prompt"] else f"  ({r['reason']})"
        print(f"{_visible(r['session_id'], 24):<24} {_visible(r['source'], 10):<10} {_when(r['frozen_at']):<16} "
              f"{differ}{why}".rstrip())
    return 0


def _sessions(args: argparse.Namespace, ctx: CliContext) -> int:
    if args.stale:
        return _stale(args, ctx)
    from ..sessions.profile import session_store_note

    with StateDB(ctx.home.state_db) as db:
        st = db.status()
        items = db.sessions(limit=args.limit) if st.ok else []
    elsewhere = session_store_note(ctx.config, ctx.home)
    if args.json:
        out = {"state_db": st.as_dict(), "sessions": [s.as_dict() for s in items]}
        if elsewhere:
            out["session_store"] = {"name": ctx.config.session_store, "message": elsewhere}
        print_json(out)
        return 0
    if elsewhere and not items:  # not "no sessions": they are in a store memdeck does not read
        print(elsewhere)
        return 0
    if not st.ok:
        print(f"state.db: {st.state}: {st.message}", file=sys.stderr)
        return 0
    if st.degraded:
        print(f"state.db: {st.message}", file=sys.stderr)
    if not items:
        print("no sessions")
        return 0
    print(f"{'':2}{'id':<24} {'source':<10} {'started':<16} {'ended':<16} {'msgs':>5} {'cmp':>3}  title")
    for s in items:
        mark = "* " if s.live else "  "
        ended = _when(s.ended_at) if s.ended_at is not None else "open"
        print(f"{mark}{_visible(s.id, 24):<24} {_visible(s.source, 10):<10} {_when(s.started_at):<16} {ended:<16} "
              f"{s.message_count:>5} {s.compactions:>3}  {_visible(s.title, 40)}")
    return 0


def _rebuild(args: argparse.Namespace, ctx: CliContext) -> int:
    from ..live_memory.view import PLUGIN_NAME
    from ..requests.rebuild import request_rebuild

    req, cost = request_rebuild(ctx.home, args.session_id, actor=ctx.actor)
    plugin = PLUGIN_NAME in ctx.config.plugins_enabled
    note = ("the plugin asks Hermes to rebuild it at the session's next turn; the turns after that one send the "
            "rebuilt prompt" if plugin else
            "the memdeck plugin is not in plugins.enabled: nothing reaches the running session until it is")
    if args.json:
        print_json({"request": req.to_dict(), "cost": {"prompt_chars": cost.prompt_chars,
                                                        "prompt_tokens": cost.prompt_tokens},
                    "plugin_enabled": plugin, "note": note})
        return 0
    print(cost.sentence())
    print(f"queued request #{req.request_id} (journal #{req.journal_id}; `memdeck undo` cancels it before "
          f"delivery): {note}")
    return 0


def _recall(args: argparse.Namespace, ctx: CliContext) -> int:
    with StateDB(ctx.home.state_db) as db:
        st = db.status()
        hits = recall(db, args.query, limit=args.limit, current_session_id=args.session) if st.ok else []
    if args.json:
        print_json({"query": args.query, "state_db": st.as_dict(), "count": len(hits), "results": [h.as_dict() for h in hits]})
        return 0
    if not st.ok:
        print(f"state.db: {st.state}: {st.message}", file=sys.stderr)
        return 0
    if not hits:
        print("no matching sessions")
        return 0
    for h in hits:
        lineage = f" (lineage {h.lineage_root})" if h.lineage_root != h.session_id else ""
        flag = " [compacted]" if h.compacted else ""
        print(f"{h.session_id}{lineage}  {_when(h.started_at)}  {h.source}  {_visible(h.title, 40)}".rstrip())
        print(f"  {h.matched_role} #{h.match_message_id}{flag}: {_visible(h.snippet, 160)}".rstrip())
    return 0


def _limit(lo: int, hi: int | None = None):
    def parse(value: str) -> int:
        try:
            n = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
        if n < lo or (hi is not None and n > hi):
            raise argparse.ArgumentTypeError(f"must be {lo}-{hi}, got {n}" if hi is not None else f"must be at least {lo}, got {n}")
        return n
    return parse


def register(sub: argparse._SubParsersAction) -> None:  # noqa: SLF001
    p = sub.add_parser("sessions", help="list state.db sessions (newest first; * marks the live one)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--limit", type=_limit(1), default=None, metavar="N", help="show at most N sessions")
    p.add_argument("--stale", action="store_true",
                   help="every open session with the number of memory entries its frozen prompt differs by")
    p.set_defaults(handler=_sessions)
    ssub = p.add_subparsers(dest="sessions_command", metavar="ACTION", required=False)
    ls = ssub.add_parser("list", help="list state.db sessions (the default ACTION)")
    ls.add_argument("--json", action="store_true", help="machine-readable output")
    ls.add_argument("--limit", type=_limit(1), default=None, metavar="N", help="show at most N sessions")
    ls.add_argument("--stale", action="store_true",
                    help="every open session with the number of memory entries its frozen prompt differs by")
    ls.set_defaults(handler=_sessions)
    rb = ssub.add_parser("rebuild", help="queue a rebuild of one open session's system prompt by Hermes at its "
                                          "next turn (states the cache cost; undoable until delivered)")
    rb.add_argument("session_id", metavar="SID", help="the open session (see `memdeck sessions`)")
    rb.add_argument("--json", action="store_true", help="machine-readable output")
    rb.set_defaults(handler=_rebuild)
    r = sub.add_parser("recall", help="preview what Hermes' session_search would recall for QUERY")
    r.add_argument("query", metavar="QUERY")
    r.add_argument("--json", action="store_true", help="machine-readable output")
    r.add_argument("--limit", type=_limit(1, 10), default=3, metavar="N", help="sessions to return (1-10, default 3)")
    r.add_argument("--session", default=None, metavar="SID", help="the current session (its lineage is skipped)")
    r.set_defaults(handler=_recall)
