"""``memdeck constraints``: what each compaction of a session did to every rule the user gave
(kept, weakened, lost, promoted, orphan), each with its evidence (``core/constraints``)."""

from __future__ import annotations

import argparse
import datetime as _dt
from typing import Any

from .common import CliContext, print_json
from .memory_cmds import safe

_STYLE = {"kept": "kept     ", "weakened": "WEAKENED ", "lost": "LOST     ", "promoted": "PROMOTED ", "orphan": "orphan   "}


def _constraints(args: argparse.Namespace, ctx: CliContext) -> int:
    from ..constraints.ledger import counts, session_ledger
    from ..errors import Refused
    from ..sessions.statedb import StateDB

    if not ctx.home.state_db.exists():
        raise Refused("no state.db in this home: there are no compactions to read", code="no_statedb")
    with StateDB(ctx.home.state_db) as db:
        status = db.status()
        if status.state != "ok":
            raise Refused(f"state.db cannot be read ({status.state}): {status.message}", code="unreadable")
        sid = args.session
        if sid is None:
            live = db.live_session()
            sid = live.id if live is not None else None
            if sid is None:
                sessions = db.sessions(limit=1)
                sid = sessions[0].id if sessions else None
        if sid is None:
            raise Refused("state.db holds no session: there are no compactions to read", code="no_session")
        ledger: dict[str, Any] = session_ledger(db, ctx.home, ctx.config, sid, compaction=args.compaction,
                                                semantic=not args.keyword)
    if args.json:
        print_json(ledger)
        return 0
    c = counts(ledger)
    print(f"session {safe(sid, one_line=True)} · {len(ledger['compactions'])} compactions · method {ledger['method']} · "
          + ", ".join(f"{n} {k}" for k, n in c.items()))
    for comp in ledger["compactions"]:
        at = _dt.datetime.fromtimestamp(comp["at"]).strftime("%Y-%m-%d %H:%M")
        print(f"\ncompaction {comp['compaction_id']} ({comp['mode']}, {at}){'' if comp['summary_found'] else ': no summary row found'}")
        if not comp["items"]:
            print("  no rule in the compacted turns, no constraint line in the summary")
        for it in comp["items"]:
            words = it["rule"] if it["rule"] is not None else it["summary_line"]
            turn = f" (turn {it['source_turn_id']})" if it["source_turn_id"] is not None else ""
            print(f"  {_STYLE[it['verdict']]} {safe(words or '', one_line=True, width=90)}{turn}")
            if it["rule"] is not None and it["summary_line"] is not None:
                print(f"            summary: {safe(it['summary_line'], one_line=True, width=90)}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # noqa: SLF001
    p = sub.add_parser("constraints", help="what each compaction did to every rule the user gave: kept, weakened, "
                                           "lost, promoted, orphan, with the evidence")
    p.add_argument("--session", default=None, metavar="SID", help="the session (default: the live one)")
    p.add_argument("--compaction", type=int, default=None, metavar="N", help="only the N-th compaction (from 1)")
    p.add_argument("--keyword", action="store_true", help="keyword matching even with the semantic extra")
    p.add_argument("--json", action="store_true", help="print the ledger as JSON")
    p.set_defaults(handler=_constraints)
