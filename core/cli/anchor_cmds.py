"""``memdeck anchors | pin | unpin | anchor edit|archive|restore | audit | preview``.

The session defaults to the live session in state.db, else the most recently modified MemLock
session file. Exit codes: 0 success, 1 refused (reason on stderr), 2 usage.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..anchors.files import default_session_id
from ..anchors.lifecycle import SessionAudit, audit_session
from ..anchors.store import AnchorStore
from ..sessions.records import DBStatus
from ..sessions.statedb import StateDB
from ..text import visible as _visible
from .common import CliContext, UsageError, print_json
from .session_cmds import _when


def _store(ctx: CliContext) -> AnchorStore:
    return AnchorStore(ctx.home, ctx.config, actor=ctx.actor)


def _session(args: argparse.Namespace, ctx: CliContext, store: AnchorStore, db: StateDB | None = None) -> str:
    sid = getattr(args, "session", None)
    if sid:
        return str(sid)
    live = None
    if db is not None:
        info = db.live_session() if db.status().ok else None
        live = info.id if info else None
    else:
        with StateDB(ctx.home.state_db) as d:
            info = d.live_session() if d.status().ok else None
            live = info.id if info else None
    found = default_session_id(store, live)
    if not found:
        unreadable = [i for i in store.list_sessions() if i.error]
        if unreadable:
            raise UsageError(f"no session: state.db has no live session and no MemLock session file can be read "
                             f"({unreadable[0].path.name}: {unreadable[0].error}); pass --session SID")
        raise UsageError("no session: state.db has no live session and there is no MemLock session file; pass --session SID")
    return found


def _audit(args: argparse.Namespace, ctx: CliContext) -> SessionAudit:
    sa, _st = _audit_with_status(args, ctx)
    return sa


def _audit_with_status(args: argparse.Namespace, ctx: CliContext, *, warn: bool = True) -> tuple[SessionAudit, DBStatus]:
    """The audit plus state.db's status; when state.db cannot be read the verdicts audit no
    conversation at all, so (with ``warn``) stderr says so instead of a silent low score."""
    store = _store(ctx)
    with StateDB(ctx.home.state_db) as db:
        st = db.status()
        sid = _session(args, ctx, store, db)
        progress = _stderr_progress("auditing compaction") if sys.stderr.isatty() else None
        sa = audit_session(db, store, sid, ctx.config, progress=progress)
    if warn and not st.ok:
        print(f"memdeck: warning: state.db {st.state}: {st.message}; the verdicts below audit no conversation",
              file=sys.stderr)
    return sa, st


# ── anchors ──────────────────────────────────────────────────────────────────


def _anchors(args: argparse.Namespace, ctx: CliContext) -> int:
    sa, st = _audit_with_status(args, ctx)
    if args.json:
        print_json({"session_id": sa.session_id, "score": sa.score, "state_db": st.as_dict(),
                    "anchors": [{**a.to_dict(), "session_id": sa.session_id} for a in sa.anchors]})
        return 0
    score = "n/a" if sa.score is None else f"{sa.score}%"
    print(f"session {_visible(sa.session_id)}  integrity {score}  compactions {sa.compactions}")
    if not sa.anchors:
        print("no anchors")
        return 0
    print(f"  {'id':<18} {'state':<11} {'p':>3} {'scope':<7} {'hits':>5}  reminder")
    for a in sa.anchors:
        hits = f"{a.verdict.hits}/{len(a.verdict.probes)}" if a.verdict.probes else "-"
        print(f"  {_visible(a.anchor.id, 18):<18} {a.state:<11} {a.anchor.priority:>3} {a.scope:<7} {hits:>5}  "
              f"{_visible(a.anchor.reminder, 60)}")
    return 0


def _audit_cmd(args: argparse.Namespace, ctx: CliContext) -> int:
    if args.what_if is not None:
        return _what_if_cmd(args, ctx)
    if args.probe or args.priority is not None:
        raise UsageError("--probe and --priority go with --what-if TEXT")
    sa, st = _audit_with_status(args, ctx)
    if args.json:
        d = sa.to_dict()
        print_json({"session_id": d["session_id"], "score": d["score"], "state_db": st.as_dict(),
                    "anchors": [{"id": a["id"], "state": a["state"], "hits": a["hits"], "probes": a["probes"],
                                 "missing": a["missing"], "similarity": a["similarity"]} for a in d["anchors"]],
                    "reminder_block": d["reminder_block"], "history": d["history"], "method": d["method"],
                    "detection": d["detection"]})
        return 0
    score = "n/a" if sa.score is None else f"{sa.score}%"
    print(f"session {_visible(sa.session_id)}: integrity {score} ({sa.method}; {sa.compactions} compaction(s) in state.db)")
    if sa.detection is not None and sa.detection.reason:
        print(f"detection: {sa.detection.configured} configured, {sa.detection.active} in use: {sa.detection.reason}")
    for a in sa.anchors:
        missing = ", ".join(a.verdict.missing)
        extra = f" missing: {_visible(missing)}" if missing else ""
        sim = f" sim={a.verdict.similarity:.2f}" if a.verdict.similarity is not None else ""
        print(f"  [{a.state.upper()}] {_visible(a.anchor.id)} hits {a.verdict.hits}/{len(a.verdict.probes)}{sim}{extra}")
    if sa.history:
        print("history:")
        for h in sa.history:
            score = "n/a" if h["score"] is None else f"{h['score']}%"
            print(f"  {_when(h['time'])}  score={score} casualties={len(h['casualties'])} ({h['source']})")
    print("reminder block at the next audit:" if sa.reminder_block else "reminder block at the next audit: (none)")
    if sa.reminder_block:
        print(_visible_block(sa.reminder_block))
    return 0


def _what_if_cmd(args: argparse.Namespace, ctx: CliContext) -> int:
    """``audit --what-if TEXT``: the anchor replayed through each past compaction of the session
    (``core/anchors/whatif.py``). ``--json``: a list of ``{compaction_id, at, verdict, score, ...}``."""
    from ..anchors.whatif import what_if

    store = _store(ctx)
    with StateDB(ctx.home.state_db) as db:
        st = db.status()
        sid = _session(args, ctx, store, db)
        progress = _stderr_progress("replaying compaction") if sys.stderr.isatty() else None
        wi = what_if(db, store, sid, args.what_if, probes=args.probe or None,
                     priority=50 if args.priority is None else args.priority, config=ctx.config, progress=progress)
    if not st.ok:
        print(f"memdeck: warning: state.db {st.state}: {st.message}; no compaction can be replayed", file=sys.stderr)
    det = wi.detection
    if det is not None and det.reason:
        print(f"memdeck: warning: detection {det.configured} configured, {det.active} in use: {det.reason}",
              file=sys.stderr)
    if args.json:
        print_json([p.to_dict() for p in wi.points])
        return 0
    a = wi.anchor
    print(f"what if {_visible(a['text'], 80)!s} (priority {a['priority']}, probes {', '.join(a['probes']) or '(none)'})"
          f" had been pinned in session {_visible(sid)}:")
    if wi.replaces:
        print(f"  (the session holds it already as {_visible(wi.replaces)}: replayed in its place)")
    if not wi.points:
        print("  no compaction in state.db to replay")
    else:
        print(f"  {wi.alive_count} of {len(wi.points)} compaction(s) alive ({wi.method})")
    if wi.carried_by:
        print(f"  alive because {wi.carried_by} carries it: the session's system prompt holds its words, and "
              "MemLock audits the prompt too, whatever the conversation says")
    for p in wi.points:
        v = p.verdict
        sim = f" sim={v.similarity:.3f}" if v.similarity is not None else ""
        score = "n/a" if p.score is None else f"{p.score}%"
        print(f"  #{p.compaction_id:<4} {_when(p.at)}  {'ALIVE' if v.alive else 'DRIFTED':<7} "
              f"hits {v.hits}/{len(v.probes)}{sim}  score {score}  "
              f"{_block_word(p)}")
    last = wi.points[-1] if wi.points else None
    if last is not None and last.reminder_block:
        print(f"reminder block MemLock would have injected after compaction #{last.compaction_id}:")
        print(_visible_block(last.reminder_block))
    if wi.suggested_probes:
        print("suggested probes (words of the text that survive in the compacted summaries): " + ", ".join(
            f"{_visible(w)} ({n}/{len(wi.points)})" for w, n in wi.suggested_probes))
    elif wi.points:
        print("suggested probes: none (no word of the text survives in a compacted summary)")
    return 0


def _block_word(p: Any) -> str:
    if not p.reminder_block:
        return "no reminder block"
    if p.in_reminder_block:
        return "re-injected"
    return "left out of the reminder block (budget)" if not p.alive else "reminder block without it"


def _stderr_progress(what: str) -> Any:
    """``progress(done, total)`` writing ``what N of M`` on one stderr line (a terminal only):
    a first semantic history can take minutes; Ctrl-C stops it and keeps what was done."""
    def progress(done: int, total: int) -> None:
        print(f"\r{what} {done + 1} of {total} (newest first; ctrl+c stops, what is done is kept)…",
              end="" if done + 1 < total else "\n", file=sys.stderr, flush=True)

    return progress


def _visible_block(block: str) -> str:
    return "\n".join(_visible(line) for line in block.split("\n"))


# ── writes ───────────────────────────────────────────────────────────────────


def _pin(args: argparse.Namespace, ctx: CliContext) -> int:
    store = _store(ctx)
    try:
        sid = _session(args, ctx, store)
    except UsageError:
        if args.scope != "global":
            raise
        sid = ""  # a global pin lives in memlock/persist/ and needs no session
    if not sid:
        a = store.pin(args.text, priority=args.priority, reminder=args.reminder, probes=args.probe or None,
                      scope="global", session_id="")
        if args.json:
            print_json({"success": True, "session_id": None, "scope": "global", "anchor": a.to_dict()})
        else:
            print(f"pinned {a.id} globally (priority {a.priority}, {len(a.probes)} probe(s)) in memlock/persist/; "
                  "MemLock seeds it into every new session")
        return 0
    a = store.pin(args.text, priority=args.priority, reminder=args.reminder, probes=args.probe or None,
                  scope=args.scope, session_id=sid)
    if args.json:
        print_json({"success": True, "session_id": sid, "scope": args.scope, "anchor": a.to_dict()})
    else:
        print(f"pinned {a.id} (priority {a.priority}, {len(a.probes)} probe(s), scope {args.scope}) in session {_visible(sid)}")
    return 0


def _unpin(args: argparse.Namespace, ctx: CliContext) -> int:
    store = _store(ctx)
    sid = _session(args, ctx, store)
    res = store.unpin(args.id, session_id=sid, scope=args.scope)
    if args.json:
        print_json({"success": True, "session_id": sid, **res})
    else:
        where = [w for w, ok in (("session " + sid, res["session_removed"]), ("persist/", res["global_removed"])) if ok]
        print(f"unpinned {_visible(args.id)} from {' and '.join(_visible(w) for w in where)}")
    return 0


def _edit(args: argparse.Namespace, ctx: CliContext) -> int:
    store = _store(ctx)
    sid = _session(args, ctx, store)
    if args.text is None and args.reminder is None and args.priority is None and not args.probe:
        raise UsageError("anchor edit needs at least one of --text, --reminder, --priority, --probe")
    a = store.update(args.id, text=args.text, reminder=args.reminder, priority=args.priority,
                     probes=args.probe or None, session_id=sid)
    if args.json:
        print_json({"success": True, "session_id": sid, "anchor": a.to_dict()})
    else:
        print(f"updated {a.id} ({len(a.history or [])} prior version(s) kept)")
    return 0


def _archive(args: argparse.Namespace, ctx: CliContext) -> int:
    store = _store(ctx)
    sid = _session(args, ctx, store)
    archive_id = store.archive(args.id, sid, args.reason or "")
    if args.json:
        print_json({"success": True, "session_id": sid, "id": args.id, "archive_id": archive_id})
    else:
        print(f"archived {_visible(args.id)} from session {_visible(sid)} as {archive_id}")
    return 0


def _restore(args: argparse.Namespace, ctx: CliContext) -> int:
    a = _store(ctx).restore(args.archive_id)
    if args.json:
        print_json({"success": True, "anchor": a.to_dict()})
    else:
        print(f"restored {a.id}")
    return 0


def _preview(args: argparse.Namespace, ctx: CliContext) -> int:
    from ..memory.prompt_block import render_prompt_blocks

    prompt = render_prompt_blocks(ctx.home, ctx.config)
    block = ""
    sid = None
    try:
        sa = _audit(args, ctx)
        block, sid = sa.reminder_block, sa.session_id
    except UsageError:
        pass
    if args.json:
        print_json({"system_prompt_block": prompt, "session_id": sid, "reminder_block": block})
        return 0
    print("── system prompt memory block ──")
    print(_visible_block(prompt) if prompt else "(empty)")
    print(f"── reminder block MemLock would inject next{f' (session {_visible(sid)})' if sid else ''} ──")
    print(_visible_block(block) if block else "(none)")
    return 0


# ── parser ───────────────────────────────────────────────────────────────────


def _session_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--session", metavar="SID", help="session id (default: the live session, else the newest MemLock file)")


def _int(value: str) -> Any:
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"priority must be an integer 1-100, got {value!r}") from None


def register(sub: argparse._SubParsersAction) -> None:  # noqa: SLF001
    p = sub.add_parser("anchors", help="list a session's anchors with their lifecycle state")
    _session_arg(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_anchors)

    p = sub.add_parser("pin", help="pin a standing instruction (a MemLock anchor)")
    p.add_argument("text")
    p.add_argument("--priority", type=_int, default=50, help="1-100, higher is re-injected first (default 50)")
    p.add_argument("--reminder", help="short form re-injected after compaction (default: first sentence)")
    p.add_argument("--probe", action="append", metavar="P", help="a survival keyword (repeatable; default: derived)")
    p.add_argument("--scope", choices=("session", "global"), default="session")
    _session_arg(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_pin)

    p = sub.add_parser("unpin", help="remove a pinned anchor")
    p.add_argument("id")
    p.add_argument("--scope", choices=("session", "global"), default=None,
                   help="global also deletes the durable copy in memlock/persist/")
    _session_arg(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_unpin)

    p = sub.add_parser("anchor", help="edit, archive or restore an anchor")
    asub = p.add_subparsers(dest="anchor_command", metavar="ACTION", required=True)
    e = asub.add_parser("edit", help="update an anchor in place (keeps a version history of 5)")
    e.add_argument("id")
    e.add_argument("--text")
    e.add_argument("--reminder")
    e.add_argument("--priority", type=_int)
    e.add_argument("--probe", action="append", metavar="P")
    _session_arg(e)
    e.add_argument("--json", action="store_true")
    e.set_defaults(handler=_edit)
    a = asub.add_parser("archive", help="move an anchor to memdeck's archive")
    a.add_argument("id")
    a.add_argument("--reason", default="")
    _session_arg(a)
    a.add_argument("--json", action="store_true")
    a.set_defaults(handler=_archive)
    r = asub.add_parser("restore", help="put an archived anchor back")
    r.add_argument("archive_id")
    r.add_argument("--json", action="store_true")
    r.set_defaults(handler=_restore)

    p = sub.add_parser("audit", help="MemLock's drift audit of a session: score, verdicts, history, reminder block")
    _session_arg(p)
    p.add_argument("--what-if", metavar="TEXT", dest="what_if",
                   help="replay TEXT as an anchor through each past compaction: alive or drifted, the score, the "
                        "reminder block, suggested probes (nothing is pinned)")
    p.add_argument("--probe", action="append", metavar="P", help="with --what-if: a probe (repeatable; default: derived)")
    p.add_argument("--priority", type=_int, default=None, help="with --what-if: 1-100 (default 50)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_audit_cmd)

    p = sub.add_parser("preview", help="the system-prompt memory block and the reminder block MemLock would inject next")
    _session_arg(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_preview)
