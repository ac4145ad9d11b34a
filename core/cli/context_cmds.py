"""``memdeck context``: what a running session sees (its frozen memory against the files, its prompt
by section, what the next turn adds, the next compaction). Read-only.

Exit codes: 0 (also when there is no session: the reason is printed, and in ``--json`` the
``reason`` key says it), 1 an unknown ``--session``, 2 usage.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import sys
from typing import Any

from ..context.prompts import PromptCache
from ..context.report import ContextReport, build_report, disk_entries, verdict_for
from ..context.tokens import TOKENIZERS
from ..hermes_version import HermesVersion
from ..sessions.records import PromptStamp
from ..sessions.statedb import StateDB
from ..text import percent_text
from ..text import visible as _visible
from .common import CliContext, print_json


def pick_session(stamps: list[PromptStamp]) -> PromptStamp | None:
    """The live session among open sessions' stamps: the newest activity (start or newest row),
    ties by id, as :meth:`memdeck.core.sessions.listing.SessionReader.live_session`."""
    return max(stamps, key=lambda s: (s.activity, s.session_id), default=None)


def _reminder(ctx: CliContext, db: StateDB, sid: str) -> str:
    """The reminder block MemLock would inject now for ``sid`` (the current audit, no history)."""
    from ..anchors.lifecycle import reminder_now
    from ..anchors.store import AnchorStore

    try:
        return reminder_now(db, AnchorStore(ctx.home, ctx.config), sid, ctx.config)
    except Exception:  # noqa: BLE001 - an unreadable MemLock file: no reminder, said by the report
        return ""


def _version(ctx: CliContext) -> HermesVersion:
    from ..sessions.profile import home_version

    return home_version(ctx.home)


def _when(ts: float | None) -> str:
    if not ts:
        return "-"
    try:
        return _dt.datetime.fromtimestamp(float(ts)).strftime("%Y-%m-%d %H:%M")
    except (OverflowError, OSError, ValueError):
        return str(ts)


def _print_text(rep: ContextReport) -> None:
    d = rep.to_dict()
    print(f"session {_visible(rep.session_id, 40)} ({_visible(d['source'], 12)}) · prompt {d['prompt_chars']:,} chars"
          f" · frozen {_when(d['frozen_at'])}")
    mem = d["memory"]
    if not mem["in_prompt"]:
        print(f"memory: {mem['reason']}")
    elif not mem["changes"]:
        print("memory: the session sees exactly what the files hold")
    else:
        n = len(mem["changes"])
        print(f"memory: {n} {'entry differs' if n == 1 else 'entries differ'}; {mem['new_session']} to see them")
        for c in mem["changes"]:
            where = "MEMORY" if c["target"] == "memory" else "USER"
            print(f"  {c['change']:8} {where}")
            if c["before"] is not None:
                print(f"    - {_visible(c['before'], 100)}")
            if c["after"] is not None:
                print(f"    + {_visible(c['after'], 100)}")
    for n in mem["notes"]:
        print(f"  note: {n}")
    print("sections (chars, Hermes' estimate in tokens" + (", exact" if rep.exact_tokenizer else "") + "):")
    for s in d["sections"]:
        exact = f"  {s['exact_tokens']:>7,}" if "exact_tokens" in s else ""
        print(f"  {s['title']:34} {s['chars']:>8,} {s['tokens']:>7,}{exact}")
    print(f"  {'unattributed':34} {d['unattributed_chars']:>8,}")
    print(f"  {'tool schemas':34}   not recorded")
    print("the next turn adds:")
    for p in d["next_turn"]:
        if p["chars"] is None:
            print(f"  {p['title']:36} {p.get('note', '')}")
        else:
            extra = f" ({p['count']} messages)" if "count" in p else ""
            print(f"  {p['title']:36} {p['chars']:>8,} chars ~{p['tokens']:,} tokens{extra}")
    _print_injected(rep)
    nc = d["next_compaction"]
    if nc:
        share_text = percent_text(nc["estimated_tokens"], nc["threshold_tokens"])
        print(f"next compaction: ~{nc['estimated_tokens']:,} of {nc['threshold_tokens']:,} tokens "
              f"({share_text}; context {nc['context_length']:,} from {nc['context_length_source']}; "
              "tool schemas not counted)")
    else:
        print(f"next compaction: unknown: {d['next_compaction_reason']}")
    if d["calibration"]:
        c = d["calibration"]
        print(f"calibration: the provider reported {c['reported_per_call']:,.0f} tokens per call, Hermes' estimate "
              f"{c['estimated_per_call']:,.0f} (ratio {c['ratio']})")
    else:
        print(f"calibration: {d['calibration_reason']}")
    if rep.exact_tokenizer:
        print(f"exact counts: {rep.exact_tokenizer}")
    elif rep.exact_reason:
        print(f"exact counts: {rep.exact_reason}")
    _print_cost(d.get("cost"))


def _print_cost(cost: Any) -> None:
    """What the prompt costs (issue 37, ``core/context/cost.py``): the recorded turns, the last break and
    what a memory write makes the provider write again."""
    if not cost:
        return
    turns = cost["turns"]
    if not turns:
        print(f"cost: {cost['turns_reason']}")
    else:
        rec = cost["recorded_totals"]
        hit = "—" if rec["hit_ratio"] is None else f"{rec['hit_ratio'] * 100:.0f}%"
        print(f"cost, turn by turn ({rec['requests']:,} requests recorded, cache hit {hit}):")
        for t in turns[-10:]:
            brk = f"  ✗ {t['break']['reason']}" if t["break"] else ""
            print(f"  turn #{t['turn']:<4} read {t['cache_read_tokens']:>9,}  write {t['cache_write_tokens']:>8,}  "
                  f"in {t['input_tokens']:>7,}  out {t['output_tokens']:>7,}{brk}")
    est = cost["write_estimate"]
    tokens = f"~{est['tokens']:,} tokens" if est.get("tokens") is not None else "an unknown number of tokens"
    print(f"a memory write: invalidates the {est['tier'] or '?'} tier from the {est['when']} ({est['also']}); "
          f"the provider writes {tokens} again once ({est['kind']} cache: {est['rule']}); {est['batching']}")


def _print_injected(rep: Any) -> None:
    """What a memory provider and the plugins appended to each user turn (``core/context/injected.py``)."""
    inj = rep.injected
    prov = f"provider {inj.provider}" if inj.provider else "no memory provider configured"
    if not inj.recorded:
        print(f"injected, turn by turn ({prov}): {inj.reason}")
        return
    print(f"injected, turn by turn ({prov}; user turns since the last compaction: {len(inj.turns)}):")
    if not inj.turns:
        print("  no user turn yet")
    for t in inj.turns[-20:]:
        if not t.parts:
            print(f"  turn #{t.turn_id} {_when(t.time)}: nothing injected")
            continue
        for part in t.parts:
            who = part.source if part.name == part.source else f"{part.source} {_visible(part.name, 40)}"  # not "memlock memlock"
            print(f"  turn #{t.turn_id} {_when(t.time)}: {who}: {part.chars:,} chars ~{part.tokens:,} tokens")
            shown = part.recalled if part.recalled is not None else part.text
            for line in shown.splitlines()[:12]:
                print(f"      {_visible(line, 110)}")
    if len(inj.turns) > 20:
        print(f"  ({len(inj.turns) - 20} older turns: memdeck context --json)")
    share = rep.provider_share()
    if share is not None and inj.provider:
        print(f"  the provider's fences in context: ~{share['tokens']:,} tokens, "
              f"{percent_text(share['tokens'], share['threshold_tokens'])} of the {share['threshold_tokens']:,} at which Hermes compacts")


def _context(args: argparse.Namespace, ctx: CliContext) -> int:
    with StateDB(ctx.home.state_db) as db:
        st = db.status()
        if not st.ok:
            return _none(args, f"state.db: {st.message}")
        if args.session:
            stamps = db.prompt_stamps([args.session])
            if not stamps:
                print(f"memdeck: error: no session {args.session!r} in state.db (see `memdeck sessions`)", file=sys.stderr)
                return 1
            stamp = stamps[0]
        else:
            picked = pick_session(db.prompt_stamps())
            if picked is None:
                return _none(args, "no open session: nothing is running (pick one with --session)")
            stamp = picked
        rep = build_report(db, ctx.home, ctx.config, stamp, cache=PromptCache(), disk=disk_entries(ctx.home),
                           version=_version(ctx), reminder_block=_reminder(ctx, db, stamp.session_id),
                           exact=args.exact)
    if args.json:
        from ..live_memory.view import delivery_view

        out = rep.to_dict()
        live = delivery_view(ctx.home, ctx.config, stamp.session_id, rep.diff.frozen.changes, verdict_for(_version(ctx)))
        out["memory"]["delivery"] = live.pop("delivery")
        out["memory"]["live_memory"] = live
        print_json(out)
    else:
        _print_text(rep)
    return 0


def _none(args: argparse.Namespace, reason: str) -> int:
    if args.json:
        print_json({"session_id": None, "reason": reason, "frozen_at": None,
                    "memory": {"in_prompt": False, "reason": reason, "differences": 0, "changes": [], "delivery": []},
                    "sections": [], "unattributed_chars": 0, "next_compaction": None, "next_compaction_reason": reason})
    else:
        print(reason)
    return 0


def running_session_note(ctx: CliContext) -> str | None:
    """After a memory write: with live memory on (``memdeck.live_memory`` notice/delta and the
    plugin enabled) the live session gets it on its next turn; else it will not see it until a new
    session, and how to start one there (``core/context/new_session.py``). The sentence:
    :func:`memdeck.core.live_memory.view.config_write_note`. None without a live session whose
    prompt holds the memory. Never raises."""
    from ..context.frozen import find_blocks
    from ..live_memory.view import config_write_note

    try:
        if not ctx.home.state_db.exists():
            return None
        with StateDB(ctx.home.state_db) as db:
            stamp = pick_session(db.prompt_stamps())
            prompt = db.system_prompt(stamp.session_id) if stamp is not None else ""
    except Exception:  # noqa: BLE001 - the note is a courtesy; the write is done
        return None
    if stamp is None or not find_blocks(prompt):
        return None
    return config_write_note(ctx.config, stamp.source, stamp.session_id)


def stale_sessions(ctx: CliContext, db: StateDB) -> list[dict[str, Any]]:
    """``sessions --stale``: every open session with its number of differences (no entry texts) and
    ``live_memory`` ``{mode, delivered, waiting, withheld}`` (issue 33); the rows the Memory tab of
    Hermes' dashboard and ``/memdeck stale`` list too (:func:`..plugin.dashboard_api.stale_session_rows`)."""
    from ..plugin.dashboard_api import stale_session_rows

    return stale_session_rows(ctx.home, ctx.config, db)


def register(sub: argparse._SubParsersAction) -> None:  # noqa: SLF001
    p = sub.add_parser("context", help="what the running session sees: its frozen memory against the files, its prompt "
                       "by section, the next turn, the next compaction")
    p.add_argument("--session", default=None, metavar="SID", help="this session (default: the live one)")
    p.add_argument("--json", action="store_true", help="machine-readable output (docs/STATUS_JSON.md)")
    p.add_argument("--exact", nargs="?", const=TOKENIZERS[0], default=None, choices=TOKENIZERS, metavar="TOKENIZER",
                   help=f"also count tokens exactly with an offline tokenizer ({', '.join(TOKENIZERS)}; default "
                   f"{TOKENIZERS[0]})")
    p.set_defaults(handler=_context)
