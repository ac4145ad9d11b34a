"""``memdeck hygiene``: duplicates, contradictions, stale and wasteful entries with their
evidence (``core/hygiene``), ranked by the characters they cost on every turn; ``memdeck
hygiene apply ID`` applies one proposal through the locked core as one journaled change
(``memdeck undo`` puts it back). Nothing is applied without being asked; nothing goes online.
"""

from __future__ import annotations

import argparse
import datetime as _dt
from typing import Any

from .common import CliContext, print_json
from .memory_cmds import safe


def _when(ts: float | None) -> str:
    return _dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d") if ts else "unknown date"


def _who(e: Any) -> str:
    if e.written_at is None and e.actor is None:
        return "written by ? (no history)"
    sess = f", session {safe(e.session_id, one_line=True, width=24)}" if e.session_id else ""
    return f"written by {e.actor or '?'} on {_when(e.written_at)}{sess}"


def _report_kw(args: argparse.Namespace) -> dict[str, Any]:
    return {"semantic": not args.lexical, "stale_days": args.stale_days}


def _list(args: argparse.Namespace, ctx: CliContext) -> int:
    from ..hygiene.detect import hygiene_report

    report = hygiene_report(ctx.home, ctx.config, **_report_kw(args))
    if args.json:
        print_json(report.to_dict())
        return 0
    note = f" ({report.note})" if report.note else ""
    counts = ", ".join(f"{n} {k}" for k, n in report.counts().items())
    print(f"method: {report.method}{note}; {counts}")
    for u in report.unknown:
        print(f"unknown: {safe(u, one_line=True)}")
    if not report.findings:
        print("no findings: nothing to merge, archive or check")
    for f in report.findings:
        print(f"\n{f.id}  {f.kind:13}  saves {f.chars_saved} chars per turn")
        for n, e in enumerate(f.entries, 1):
            print(f"  {n}. [{e.target}] {safe(e.text, one_line=True, width=90)}")
            print(f"     {_who(e)}")
        ev = {k: v for k, v in f.evidence.items() if k not in ("pairs", "carried_by", "method")}
        for pair in f.evidence.get("pairs", ())[:3]:
            ev.setdefault("pairs", []).append({k: pair.get(k) for k in ("similarity", "shared", "decided_by")})
        print(f"  evidence: {safe(str(ev), one_line=True, width=160)}")
        keep = next((n for n, e in enumerate(f.entries, 1) if f.proposal.keep is not None and e == f.proposal.keep), 1)
        act = {"merge": f"merge into entry {keep} as it reads (or --text): memdeck hygiene apply {f.id}",
               "archive": f"archive it: memdeck hygiene apply {f.id}",
               "choose": f"keep one, archive the other: memdeck hygiene apply {f.id} --keep 1|2"}
        print(f"  proposal: {act.get(f.proposal.action, f.proposal.action)}")
    return 0


def _apply(args: argparse.Namespace, ctx: CliContext) -> int:
    from ..hygiene.apply import apply_finding
    from .memory_cmds import _run

    return _run(args, lambda: apply_finding(ctx.home, ctx.config, args.id, text=args.text, keep=args.keep,
                                            actor=ctx.actor, **_report_kw(args)), ctx)


def register(sub: argparse._SubParsersAction) -> None:  # noqa: SLF001
    p = sub.add_parser("hygiene", help="duplicates, contradictions, stale and wasteful memory entries with their "
                                       "evidence; `hygiene apply ID` applies one proposal (journaled, undoable)")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="print the result as JSON")
    common.add_argument("--lexical", action="store_true", help="the lexical method even when the semantic extra is "
                                                               "installed")
    common.add_argument("--stale-days", type=float, default=90.0, metavar="DAYS",
                        help="an entry no session mentioned for DAYS since it was written is stale (default 90)")
    for a in common._actions:  # noqa: SLF001 - the listing takes the same options as apply
        if a.dest != "help":
            p._add_action(a)  # noqa: SLF001
    p.set_defaults(handler=_list)
    hsub = p.add_subparsers(dest="hygiene_command", metavar="ACTION", required=False)
    ls = hsub.add_parser("list", parents=[common], help="the findings (what `memdeck hygiene` alone prints)")
    ls.set_defaults(handler=_list)
    a = hsub.add_parser("apply", parents=[common], help="apply finding ID's proposal through the locked core")
    a.add_argument("id", metavar="ID")
    a.add_argument("--text", default=None, help="a duplicate group's merged entry (default: its longest entry)")
    a.add_argument("--keep", type=int, choices=(1, 2), default=None,
                   help="a contradiction: the entry that stays (the other is archived)")
    a.set_defaults(handler=_apply)
