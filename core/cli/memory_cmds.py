"""CLI commands of the memory area: status, memory ..., archive, restore, undo, pending, scan, journal.

Exit codes (``core/cli/common.py`` ``EXIT_CODES``): 0 success (also a no-op such as adding an
existing entry), 1 refused or failed (reason on stderr; an overflow also lists the current entries
with ids and sizes so you can choose what to archive), 2 usage, 3 ``scan`` found flagged items.
``--json`` prints the result (or the refusal, on stdout, with exit 1) as JSON.

Writes made here are direct user actions: they are applied even when ``memory.write_approval``
is on (that gate is for the agent; see ``core/memory/pending.py``).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import re
import sys
import unicodedata
from collections.abc import Callable
from typing import Any

from ..deck import journal as _journal
from ..deck.archive import items as _archived_items
from ..errors import Refused
from ..home import TARGET_FILES, TARGETS
from ..memory import pending as _pending
from ..memory import review as _review
from ..memory.reader import LISTED_ENTRIES, read_memory, scan_memory
from ..memory.results import WriteResult
from ..memory.store import MemoryStore
from ..memory.threats import INVISIBLE_CHARS
from ..overview.status import build_status
from ..sessions.bounds import Cut
from ..text import age_words, hidden_pattern
from ..undo import undo as _undo_last
from .common import EXIT_FINDINGS, EXIT_OK, EXIT_PARTIAL, CliContext, UsageError, add_target_arg, print_json

_INVISIBLE = "".join(sorted(INVISIBLE_CHARS))  # the extra characters safe() matches (a cache key)


def safe(text: str, *, one_line: bool = False, width: int | None = None) -> str:
    """Terminal-safe text: control, escape and invisible characters shown as ``<U+XXXX>``
    (Hermes' 17 invisible characters, ``memory/threats.py`` ``INVISIBLE_CHARS``, and Unicode
    categories Cc/Cf/Zl/Zp). One regex scan finds the candidates (:func:`hidden_pattern`)."""

    def show(m: re.Match[str]) -> str:
        ch = m.group()
        if ch == "\n":
            return " ⏎ " if one_line else "\n"
        if ch == "\t":
            return "\t"
        if ch in INVISIBLE_CHARS or unicodedata.category(ch) in {"Cc", "Cf", "Zl", "Zp"}:
            return f"<U+{ord(ch):04X}>"
        return ch

    s = hidden_pattern(_INVISIBLE).sub(show, text)
    if width is not None and len(s) > width:
        s = s[: width - 1] + "…"
    return s


def _err(msg: str) -> None:
    print(msg, file=sys.stderr)


def _print_entries(entries: list[dict[str, Any]], stream: Any = None) -> None:
    stream = stream or sys.stdout
    for e in entries:
        flag = f"  ⚠ {','.join(e.get('threats') or [])}" if e.get("threats") else ""
        print(f"  {e['id']}  {e['chars']:>5} chars  {safe(e['text'], one_line=True, width=90)}{flag}", file=stream)


def _refused(exc: Refused, as_json: bool) -> int:
    if as_json:
        print_json(exc.to_dict())
        return 1
    _err(f"memdeck: refused: {safe(exc.reason)}")
    d = exc.details
    if exc.code == "overflow" and d.get("current_entries"):
        _err(f"current usage {d.get('usage')} chars; entries (id, size) you could archive or shorten:")
        _print_entries(d["current_entries"], sys.stderr)
        _err("archive one with: memdeck archive ID")
    elif exc.code == "ambiguous" and d.get("candidates"):
        _err("candidates:")
        for c in d["candidates"]:
            where = f"[{c['target']}] " if "target" in c else ""
            _err(f"  {where}{c['id']}  {safe(str(c.get('preview', '')), one_line=True, width=90)}")
    elif exc.code == "threat" and d.get("findings"):
        for f in d["findings"][:10]:
            _err(f"  {f['id']} at {f['start']}-{f['end']}: {safe(f['excerpt'], one_line=True, width=80)}")
    elif exc.code == "no_match" and d.get("current_entries"):
        _err("current entries:")
        _print_entries(d["current_entries"], sys.stderr)
    return 1


def _run(args: argparse.Namespace, fn: Callable[[], Any], ctx: CliContext | None = None) -> int:
    as_json = bool(getattr(args, "json", False))
    try:
        res = fn()
    except Refused as exc:
        return _refused(exc, as_json)
    warning = res.details.get("warning") if isinstance(res, WriteResult) else None
    if warning:
        _err(f"memdeck: warning: {safe(str(warning))}")
    target = getattr(res, "target", None) or (res.get("target") if isinstance(res, dict) else None)
    if ctx is not None and target in ("memory", "user") and getattr(res, "changed", True):
        from .context_cmds import running_session_note

        note = running_session_note(ctx)
        if note:
            _err(f"note: {note}")
    if as_json:
        print_json(res.to_dict() if hasattr(res, "to_dict") else res)
    elif isinstance(res, WriteResult):
        extra = f" [{res.entry_id}]" if res.entry_id else ""
        arch = f" archive #{res.archive_id}" if res.archive_id is not None and res.op == "archive" else ""
        print(f"{res.message}{extra}{arch} {res.target}: {res.usage} chars")
        if res.backup:
            print(f"backup: {res.backup}")
    elif isinstance(res, dict) and "message" in res:
        print(res["message"])
    return 0


def _store(ctx: CliContext) -> MemoryStore:
    return MemoryStore(ctx.home, ctx.config, actor=ctx.actor)


def _list(args: argparse.Namespace, rows: list[Any], empty: str, show: Callable[[Any], None]) -> int:
    """Print ``rows`` (objects with ``to_dict``) as a JSON list with ``--json``, else ``empty``
    when there are none, else ``show(row)`` for each."""
    if args.json:
        print_json([r.to_dict() for r in rows])
        return 0
    if not rows:
        print(empty)
    for r in rows:
        show(r)
    return 0


def _clock(ts: float, fmt: str = "%Y-%m-%d %H:%M") -> str:
    return _dt.datetime.fromtimestamp(ts).strftime(fmt)


def _store_op(call: Callable[[MemoryStore, argparse.Namespace], Any]) -> Callable[[argparse.Namespace, CliContext], int]:
    """A handler that runs one :class:`MemoryStore` operation ``call(store, args)`` via :func:`_run`."""
    def handler(args: argparse.Namespace, ctx: CliContext) -> int:
        return _run(args, lambda: call(_store(ctx), args), ctx)

    return handler


# -- handlers -------------------------------------------------------------------------------
def _status(args: argparse.Namespace, ctx: CliContext) -> int:
    st = build_status(ctx.home, ctx.config)
    if args.json:
        print_json(st)
        return 0
    print(f"home: {st['home']} (profile {st['profile']})")
    for t in TARGETS:
        m = st["memory"][t]
        name = TARGET_FILES[t]
        state = "" if m["exists"] else " (no file yet)"
        print(f"\n{name}: {m['chars']:,}/{m['limit']:,} chars ({m['pct']}%), {len(m['entries'])} entries{state}")
        _print_file_problems(t, m)
        _print_entries(m["entries"][:LISTED_ENTRIES])
        if len(m["entries"]) > LISTED_ENTRIES:
            print(f"  … {len(m['entries']) - LISTED_ENTRIES:,} more entries: the file is far over its char limit "
                  f"(all of them: memdeck memory list --target {t})")
    pend = st["pending"]
    print(f"\npending writes: {len(pend)}")
    for p in pend:
        flag = f"  ⚠ {','.join(p['threats'])}" if p["threats"] else ""
        bad = f"  ✗ malformed: {safe(p['malformed'], one_line=True)}" if p["malformed"] else ""
        state = f"  [{p['state']}, {age_words(p.get('age_s'))} old]" if p.get("state") else ""
        print(f"  {p['id']}  {p['action'] or '?':8} {p['target']:6} {p['origin']:17} "
              f"{safe(p['summary'], one_line=True, width=60)}{state}{flag}{bad}")
    prov = st.get("provider") or {}
    if prov and (prov.get("name") or not prov.get("memory_enabled") or not prov.get("user_profile_enabled")):
        print(f"memory stores: {safe(prov.get('authoritative') or '', one_line=True)}")
    print(f"archived entries: {st['archived']}")
    _print_session_summary(st)
    for w in st["config_warnings"]:
        print(f"warning: {safe(w)}")
    for c in st.get("cut_reads") or []:
        print(f"note: {safe(Cut(c['what'], c['chars'], c['kept']).words(), one_line=True)}")
    return 0


def _print_session_summary(st: dict[str, Any]) -> None:
    """The live session, its integrity score and anchor states (from the merged sections)."""
    db = st.get("state_db") or {}
    if db.get("state") not in (None, "ok"):
        print(f"\nstate.db: {db.get('state')}: {safe(db.get('message') or '', one_line=True)}")
    live = next((s for s in st.get("sessions") or [] if s.get("live")), None)
    integ = st.get("integrity") or {}
    if live is not None:
        print(f"\nlive session: {live['id']}  {safe(live.get('title') or '', one_line=True, width=50)}  "
              f"({live.get('message_count', 0)} messages, {live.get('compactions', 0)} compactions)")
    if integ.get("session_id"):
        score = integ.get("score")
        hist = " → ".join(str(h.get("score")) for h in integ.get("history") or [])
        print(f"integrity: {'n/a' if score is None else f'{score}%'} (session {integ['session_id']})"
              + (f"; after each compaction: {hist}" if hist else ""))
    counts: dict[str, int] = {}
    for a in st.get("anchors") or []:
        counts[a.get("state", "?")] = counts.get(a.get("state", "?"), 0) + 1
    if counts:
        print("anchors: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1])))
    for mod, why in (st.get("section_errors") or {}).items():
        print(f"warning: {mod}: {safe(why, one_line=True)}")


def _mem_list(args: argparse.Namespace, ctx: CliContext) -> int:
    targets = [args.target] if args.target else list(TARGETS)
    data = {t: read_memory(ctx.home, ctx.config, t).to_dict() for t in targets}
    if args.json:
        print_json(data)
        return 0
    for t, m in data.items():
        print(f"{t}: {m['chars']:,}/{m['limit']:,} chars")
        _print_file_problems(t, m)
        _print_entries(m["entries"])
    return 0


def _print_file_problems(target: str, m: dict[str, Any]) -> None:
    """Say why a file cannot be used (unreadable) or would be refused by Hermes (drift)."""
    if m["error"]:
        print(f"  ✗ unreadable: {safe(m['error'])}")
    if m["drift"]:
        print(f"  ! drift: {m['drift']} (memdeck memory normalize --target {target})")


_add = _store_op(lambda s, a: s.add(a.target, a.text))
_replace = _store_op(lambda s, a: s.replace(a.target, a.old, a.new))
_remove = _store_op(lambda s, a: s.remove(a.target, a.selector))
_edit = _store_op(lambda s, a: s.edit(a.id, a.text, a.target))
_move = _store_op(lambda s, a: s.move(a.source, a.id, a.to))
_normalize = _store_op(lambda s, a: s.normalize(a.target))


def _show_archived(r: Any) -> None:
    reason = f"  ({safe(r.reason, one_line=True, width=40)})" if r.reason else ""
    print(f"  #{r.archive_id}  {r.kind:6} {r.where:8} {_clock(r.archived_at)}  {safe(r.text, one_line=True, width=70)}{reason}")


def _archive(args: argparse.Namespace, ctx: CliContext) -> int:
    if args.list:
        rows = _archived_items(ctx.home, kind=None if args.all_kinds else "memory")
        return _list(args, rows, "the archive is empty", _show_archived)
    if not args.selector:
        raise UsageError("archive needs ID_OR_SUBSTRING (or --list)")
    return _run(args, lambda: _store(ctx).archive(args.target, args.selector, reason=args.reason), ctx)


def _restore(args: argparse.Namespace, ctx: CliContext) -> int:
    aid = args.archive_id.lstrip("#")
    if not aid.isdigit():
        raise UsageError(f"ARCHIVE_ID is a number (see `memdeck archive --list`), got {args.archive_id!r}")
    return _run(args, lambda: _store(ctx).restore(int(aid)))


def _undo(args: argparse.Namespace, ctx: CliContext) -> int:
    return _run(args, lambda: _undo_last(ctx.home, ctx.config, actor=ctx.actor))


def _show_pending(item: Any, now: float) -> None:
    r = item.record
    flag = f"  ⚠ {','.join(r.threats)}" if r.threats else ""
    state = item.state if item.state != "clean" else "clean"
    print(f"{r.id}  {state:8} {r.action or '?'} {r.target}  {age_words(item.age(now))} old  "
          f"({safe(_review.staged_by_words(r, item.provider), one_line=True)}){flag}")
    if item.reason:
        print(f"    why: {safe(item.reason, one_line=True, width=160)}")
    for line in safe(r.text).splitlines() or [""]:
        print(f"    {line}")


def _queue(ctx: CliContext) -> list[Any]:
    from ..provider_settings import configured_provider
    from ..sessions.profile import home_version

    return _review.review_queue(ctx.home, ctx.config, configured_provider(ctx.config, home_version(ctx.home)))


def _pending_list(args: argparse.Namespace, ctx: CliContext) -> int:
    import time

    now = time.time()
    items = _queue(ctx)
    if args.json:
        print_json([i.to_dict(now) for i in items])
        return 0
    if not items:
        print("no pending memory writes")
    for i in items:
        _show_pending(i, now)
    if items:
        counts: dict[str, int] = {}
        for i in items:
            counts[i.state] = counts.get(i.state, 0) + 1
        print(", ".join(f"{n} {k}" for k, n in sorted(counts.items())) +
              (" (memdeck pending approve --all-clean / reject --stale)" if counts.get("clean") or counts.get("stale")
               else ""))
    return 0


def _bulk(args: argparse.Namespace, run: Callable[[Callable[[Any], None]], Any]) -> int:
    """Run a bulk action, printing each record's outcome as it happens (so what was printed before
    an interruption is exact), then the summary; exit 1 when a record was refused."""
    def show(o: Any) -> None:
        if not args.json:
            print(safe(o.line(), one_line=True, width=200), flush=True)

    summary = run(show)
    if args.json:
        print_json(summary.to_dict())
    else:
        print(summary.message())
    if not summary.count("refused"):
        return 0
    # each refusal's reason on stderr too, as every refusal of the CLI (the one that stopped the
    # bulk, if any, last); exit 1 when nothing was done, 5 when some records were
    for o in summary.outcomes:
        if o.outcome == "refused":
            print(f"memdeck: refused: pending write {o.id}: {safe(o.reason or o.code or '', one_line=True, width=300)}",
                  file=sys.stderr)
    return EXIT_PARTIAL if summary.done else 1


def _one_or_all(args: argparse.Namespace, flag: str, what: str) -> None:
    if bool(args.id) == bool(getattr(args, flag)):
        raise UsageError(f"pending {what} takes either an ID or --{flag.replace('_', '-')}")


def _pending_approve(args: argparse.Namespace, ctx: CliContext) -> int:
    _one_or_all(args, "all_clean", "approve")
    if args.all_clean:
        from ..provider_settings import configured_provider
        from ..sessions.profile import home_version

        return _bulk(args, lambda show: _review.approve_all_clean(
            ctx.home, ctx.config, ctx.actor, provider=configured_provider(ctx.config, home_version(ctx.home)), on_outcome=show))
    return _run(args, lambda: _pending.approve(ctx.home, ctx.config, args.id, actor=ctx.actor))


def _pending_reject(args: argparse.Namespace, ctx: CliContext) -> int:
    _one_or_all(args, "stale", "reject")
    if args.stale:
        from ..provider_settings import configured_provider
        from ..sessions.profile import home_version

        return _bulk(args, lambda show: _review.reject_all_stale(
            ctx.home, ctx.config, ctx.actor, provider=configured_provider(ctx.config, home_version(ctx.home)), on_outcome=show))
    return _run(args, lambda: _pending.reject(ctx.home, args.id, actor=ctx.actor))


def _pending_edit(args: argparse.Namespace, ctx: CliContext) -> int:
    if args.op is not None and args.op < 1:
        raise UsageError("--op counts from 1")
    rc = _run(args, lambda: _review.edit_and_approve(ctx.home, ctx.config, args.id, args.text, op=args.op,
                                                      actor=ctx.actor), ctx)
    if rc == 0 and not args.json:
        op = f" (operation {args.op})" if args.op is not None else ""
        print(f"approved pending write {safe(args.id, one_line=True)}{op} with the edited text")
    return rc


def _scan(args: argparse.Namespace, ctx: CliContext) -> int:
    from ..hermes_version import HermesVersion
    from ..memory.threats import HERMES_RULESETS
    from ..sessions.profile import HermesProfile, detect_profile, threat_differences

    found = scan_memory(ctx.home, ctx.config)
    records = _pending.list_pending(ctx.home)
    pend = [r for r in records if r.threats]
    if getattr(args, "hermes", None):  # "what would Hermes X say"
        rules = HermesVersion.of(args.hermes).threat_rules
        if rules is None:
            print(f"memdeck: unknown Hermes version {args.hermes!r} (give e.g. 0.17, 0.19, 0.22)", file=sys.stderr)
            return 2
        version, how = args.hermes, "--hermes"
        profile = HermesProfile(version=args.hermes)
    else:
        profile = detect_profile(ctx.home)
        rules, version, how = profile.threat_rules, profile.version, profile.version_source
    texts = [(t, e.text) for t in ("memory", "user") for e in read_memory(ctx.home, ctx.config, t).entries]
    texts += [(f"pending {r.id}", c) for r in records for c in _pending.replay_texts(r.payload)]
    diffs = threat_differences(profile, texts) if rules else []
    hermes = {"version": version, "from": how or None, "rules": rules,
              "rules_text": HERMES_RULESETS[rules] if rules else "the Hermes that loads this home is unknown",
              "differences": diffs}
    total = sum(len(v) for v in found.values()) + len(pend)
    status = EXIT_FINDINGS if total else EXIT_OK
    if args.json:
        print_json({"memory": found, "pending": [{"id": r.id, "threats": list(r.threats), "findings": list(r.findings)} for r in pend],
                    "hermes": hermes, "flagged": total})
        return status
    for t, rows in found.items():
        for row in rows:
            print(f"[{t}] {row['id']}  {safe(row['text'], one_line=True, width=70)}")
            for f in row["findings"]:
                print(f"    {f['id']} at {f['start']}-{f['end']}: {safe(f['excerpt'], one_line=True, width=70)}")
    for r in pend:
        print(f"[pending] {r.id}  {', '.join(r.threats)}")
    print(f"{total} flagged item(s) by memdeck's strict rules" if total else "no threats found by memdeck's strict rules")
    if rules:
        print(f"Hermes {safe(str(version), one_line=True)} (from {how}) applies: {HERMES_RULESETS[rules]}")
        for d in diffs:
            print(f"  differs [{safe(d['where'], one_line=True)}] {safe(d['text'], one_line=True, width=60)}: "
                  f"memdeck {', '.join(d['memdeck']) or 'clean'} · Hermes {', '.join(d['hermes']) or 'clean'}")
        if not diffs:
            print("  same verdict as memdeck on every entry and pending write")
    else:
        print("the Hermes that loads this home is unknown: memdeck's rules only (ask with --hermes VERSION)")
    return status


def _show_journal(r: Any) -> None:
    undone = f"  (undone by #{r.undone_by})" if r.undone_by else ""
    note = r.detail.get("recovery") if isinstance(r.detail.get("recovery"), dict) else None
    if getattr(r, "state", "done") == "unknown":  # a killed write recovery could not place: never undone automatically
        why = safe(str((note or {}).get("reason") or "the file held neither its before nor its after"), one_line=True,
                   width=100)
        undone += f"  (unknown: {why}; not undoable)"
    elif note is not None:  # settled by recovery after an interrupted write (core/memory/recovery.py)
        undone += "  (recovered)"
    what = r.detail.get("text") or r.detail.get("pending_id") or ""
    print(f"#{r.journal_id:<5} {_clock(r.ts, '%Y-%m-%d %H:%M:%S')}  {r.actor:6} {r.op:9} {r.kind:6} {r.where:8} "
          f"{safe(str(what), one_line=True, width=60)}{undone}")


def _journal_cmd(args: argparse.Namespace, ctx: CliContext) -> int:
    return _list(args, _journal.entries(ctx.home, limit=args.limit), "the journal is empty", _show_journal)


def _command(sub: argparse._SubParsersAction, name: str, help: str,  # noqa: SLF001
             handler: Callable[[argparse.Namespace, CliContext], int], *, target: bool | None = None,
             args: tuple[tuple[tuple[str, ...], dict[str, Any]], ...] = ()) -> argparse.ArgumentParser:
    """Add subcommand ``name`` with ``--json`` and ``handler``; ``target`` adds ``--target``
    (True: required, False: optional, default both), ``args`` are ``(names, kwargs)`` pairs
    for ``add_argument``."""
    p = sub.add_parser(name, help=help)
    if target is not None:
        add_target_arg(p, required=target)
    for names, kw in args:
        p.add_argument(*names, **kw)
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(handler=handler)
    if target is False:
        p.set_defaults(target=None)
    return p


def _a(*names: str, **kw: Any) -> tuple[tuple[str, ...], dict[str, Any]]:
    return names, kw


_WHERE = _a("--target", choices=TARGETS, default=None, help="where the entry is (default: search both)")


def register(sub: argparse._SubParsersAction) -> None:  # noqa: SLF001
    _command(sub, "status", "memory usage, entries, pending writes and archive count", _status)

    p = sub.add_parser("memory", help="change MEMORY.md / USER.md entries (locked, atomic, journaled)")
    msub = p.add_subparsers(dest="memory_command", metavar="ACTION", required=True)
    _command(msub, "list", "list entries with ids and sizes", _mem_list, target=False)
    _command(msub, "add", "append an entry", _add, target=True, args=(_a("text"),))
    _command(msub, "replace", "replace the whole entry OLD (id, id prefix or unique substring) with NEW", _replace,
             target=True, args=(_a("old"), _a("new")))
    _command(msub, "remove", "delete an entry (id, id prefix or unique substring)", _remove,
             args=(_a("selector", metavar="ID_OR_SUBSTRING"), _WHERE))
    _command(msub, "edit", "rewrite the entry ID with TEXT", _edit, args=(_a("id"), _a("text"), _WHERE))
    _command(msub, "move", "move the entry ID to the other file", _move, args=(
        _a("id"), _a("--to", choices=TARGETS, required=True), _a("--from", dest="source", choices=TARGETS, default=None)))
    _command(msub, "normalize", "rewrite a drifted file in the canonical form (a .bak copy is kept)", _normalize, target=True)

    _command(sub, "archive", "move an entry into memdeck's archive (restore puts it back)", _archive, args=(
        _a("selector", nargs="?", metavar="ID_OR_SUBSTRING"), _WHERE, _a("--reason", default=""),
        _a("--list", action="store_true", help="list archived entries"),
        _a("--all-kinds", action="store_true", help="with --list: anchors too")))
    _command(sub, "restore", "put an archived entry back (budget and threat checks apply)", _restore,
             args=(_a("archive_id", metavar="ARCHIVE_ID"),))
    _command(sub, "undo", "undo the last change recorded in the journal (if the file still holds it)", _undo)

    p = sub.add_parser("pending", help="review Hermes' staged memory writes (write approval); without an ACTION: "
                       "list them")
    p.add_argument("--json", action="store_true", help="with no ACTION: the list as JSON")
    p.set_defaults(handler=_pending_list)
    psub = p.add_subparsers(dest="pending_command", metavar="ACTION", required=False)
    _command(psub, "list", "list pending writes: who staged each, its state (clean, stale with Hermes' reason, "
             "refused), its age and threat findings", _pending_list)
    _command(psub, "approve", "apply a pending write through the core, then drop it; --all-clean: every clean one, "
             "each its own journaled write", _pending_approve, args=(
                 _a("id", nargs="?"), _a("--all-clean", action="store_true",
                                         help="approve every record that is clean and not stale, oldest first")))
    _command(psub, "reject", "drop a pending write (journaled, undoable); --stale: every stale one", _pending_reject,
             args=(_a("id", nargs="?"), _a("--stale", action="store_true",
                                           help="reject every record whose entry changed or vanished since staging")))
    _command(psub, "edit", "apply a pending write with TEXT in place of its staged text (the history keeps both)",
             _pending_edit, args=(_a("id"), _a("text"), _a("--op", type=int, default=None,
                                                              help="the operation of a batch to edit (from 1)")))

    _command(sub, "scan", "threat-scan every entry on disk and every pending write; show where the Hermes that "
             "loads the home would judge differently (exit 3 when anything is flagged, 0 when clean)", _scan,
             args=((("--hermes",), {"metavar": "VERSION", "help": "compare with this Hermes version's threat rules "
                                    "(default: the version detected from the home)"}),))
    _command(sub, "journal", "list recent changes made through memdeck", _journal_cmd,
             args=(_a("--limit", type=int, default=20),))
