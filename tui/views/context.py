"""The Context panel's text: what the running agent sees. Its frozen memory against the files, its
prompt section by section, what the next turn adds, the next compaction; and the words other
places use for it (the status line's badge, History's "not yet seen by", the write toast).

Pure functions of a :class:`memdeck.core.overview.snapshot.DeckSnapshot` (its ``agent_view``,
:class:`memdeck.core.overview.agent_view.AgentView`); no widgets.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.text import Text

from memdeck.core.context.new_session import new_session_hint
from memdeck.core.live_memory.view import write_note_for
from memdeck.core.text import percent, percent_text

from ..safe_text import safe_text
from .common import ago

if TYPE_CHECKING:
    from memdeck.core.context.report import ContextReport, SessionDiff
    from memdeck.core.history.changes import Change
    from memdeck.core.overview.snapshot import DeckSnapshot

_CHANGE_STYLE = {"added": "green", "removed": "red", "replaced": "yellow"}
_CHANGE_WORD = {"added": "on disk, not seen", "removed": "still obeyed", "replaced": "sees the old text"}

#: exact counts by ``(prompt sha256, tokenizer)``: ``{"sections": {name: n}, "system_prompt": n, ...}``
ExactCounts = Mapping[tuple[str, str], Mapping[str, Any]]


def followed_diff(snap: DeckSnapshot) -> SessionDiff | None:
    """The followed session's frozen-memory comparison, or None."""
    view = snap.agent_view
    return view.followed_diff if view is not None else None


def frozen_badge(snap: DeckSnapshot) -> str | None:
    """``"frozen 19 d ago: 5 entries differ"`` for the followed session when its frozen memory
    differs from the files, else None (the status line's badge)."""
    d = followed_diff(snap)
    if d is None or not d.frozen.in_prompt or not d.differences:
        return None
    n = d.differences
    return f"frozen {ago(d.stamp.frozen_at, snap.taken_at)}: {n} {'entry differs' if n == 1 else 'entries differ'}"


def differing_count(snap: DeckSnapshot) -> int:
    """Entries the followed session's frozen memory differs from the files by (0 when none)."""
    d = followed_diff(snap)
    return d.differences if d is not None and d.frozen.in_prompt else 0


def write_note(snap: Any, target: str | None) -> str | None:
    """The line added to a memory write's toast and its dialogs: with live memory on (the
    followed session's :attr:`~memdeck.core.overview.agent_view.AgentView.delivery` says
    ``notice``/``delta`` and the plugin enabled) the running session gets it on its next turn; else
    it will not see it until a new session, and the command that starts one there
    (:func:`memdeck.core.live_memory.view.write_note_for`). None when no running session holds
    that store in its prompt."""
    view = getattr(snap, "agent_view", None)
    d = view.followed_diff if view is not None else None
    if d is None or target not in ("memory", "user") or not d.frozen.in_prompt:
        return None
    live = getattr(view, "delivery", None) or {}
    return write_note_for(d.stamp.source, d.stamp.session_id, live.get("mode"), bool(live.get("plugin_enabled")))


def cost_note(snap: Any, target: str | None, delta_chars: int = 0) -> str | None:
    """What a write to ``target`` (``memory``/``user``) costs in prompt cache, said before it is made
    (issue 37): the tier it invalidates, from when, about how many tokens the provider writes again
    once, and that batching edits costs the same as one (:func:`memdeck.core.context.cost.with_change`
    of the followed session's estimate, ``delta_chars`` the chars the write adds, negative when it
    frees). None without a followed session's report."""
    from memdeck.core.context.cost import with_change

    view = getattr(snap, "agent_view", None)
    rep = view.report if view is not None else None
    cost = getattr(rep, "cost", None)
    if cost is None or target not in ("memory", "user"):
        return None
    est = with_change(cost.estimate, delta_chars)
    tier = est.get("tier") or "(tiers unknown for this Hermes)"
    words = f"cost: invalidates the {tier} tier from the {est['when']} ({est['also']})"
    if est.get("tokens") is not None:
        words += f"; the provider writes ~{est['tokens']:,} tokens again once ({est['kind']} cache: {est['rule']})"
    else:
        words += f"; {est['rule']}"
    words += "; batching edits costs the same as one"
    if est.get("live"):
        words += f". Meanwhile {est['live']}"
    return words


def pin_cost_note(tokens: int | None) -> str:
    """A pin's cost in prompt cache: none. MemLock's reminder block rides in the user turn
    (``pre_llm_call``), so the cached system prompt keeps its bytes; ``tokens`` the reminder adds when
    injected (None: unknown)."""
    each = f" (~{tokens:,} tokens of uncached input each turn it is injected)" if tokens else ""
    return ("cost: invalidates no cached tier: the reminder rides in the next user turn" + each
            + ", the system prompt keeps its bytes; batching pins costs the same as one")


def unseen_by(snap: DeckSnapshot, change: Change) -> list[str]:
    """Ids of the open sessions that do not see ``change`` yet: a memory change made after the
    session's prompt was built whose text is still one of that session's differences."""
    view = snap.agent_view
    if view is None or change.kind != "memory":
        return []
    texts = {t for t in (change.before, change.after) if t}
    out = []
    for d in view.diffs:
        if not d.frozen.in_prompt or not d.differences or change.until < d.stamp.frozen_at:
            continue
        if any(c.target == change.target and ({c.before, c.after} & texts) for c in d.frozen.changes):
            out.append(d.session_id)
    return out


# ── the panel ────────────────────────────────────────────────────────────────


@dataclass
class ContextRow:
    """One row of the Context panel: ``kind`` is ``diff``, ``section``, ``unattributed``, ``turn``
    or ``session`` (another open session); ``name`` the section / part / session id."""

    key: str
    kind: str
    name: str
    cells: tuple[Text, ...]
    obj: Any = None


def _exact_for(report: ContextReport, exact: ExactCounts | None) -> tuple[str | None, Mapping[str, Any]]:
    if not exact or report.prompt is None:
        return None, {}
    for (sha, tok), counts in exact.items():
        if sha == report.prompt.sha256:
            return tok, counts
    return None, {}


def _num(n: int | None, style: str = "") -> Text:
    return Text("—" if n is None else f"{n:,}", style=style or ("dim" if n is None else ""), justify="right")


def context_rows(snap: DeckSnapshot, exact: ExactCounts | None = None) -> list[ContextRow]:
    """The rows: the memory diff, each section of the prompt, the unattributed remainder, what the
    next turn adds, then the other open sessions with their differences."""
    view = snap.agent_view
    if view is None or view.report is None:
        return []
    rep = view.report
    _tok, counts = _exact_for(rep, exact)
    sec_exact = counts.get("sections", {}) if counts else {}
    rows: list[ContextRow] = []
    d = rep.diff
    if d.frozen.in_prompt:
        label = "no difference" if not d.differences else (
            "1 entry differs" if d.differences == 1 else f"{d.differences} entries differ")
        style = "bold yellow" if d.differences else "green"
    else:
        label, style = "no memory block", "dim"
    rows.append(ContextRow("diff", "diff", "diff", (Text("≠ frozen memory", style="bold"), Text(label, style=style),
                                                     Text(""), Text(""), Text(""))))
    tiers = rep.cost.tiers if rep.cost is not None else None
    for s in rep.sections:
        tier = tiers.tier(s.name) if tiers is not None and tiers.known else None
        rows.append(ContextRow(f"s:{s.name}", "section", s.name, (
            Text(s.title), _num(s.chars), _num(s.tokens), _num(sec_exact.get(s.name)),
            Text(tier or "prompt", style="dim"))))
    rows.append(ContextRow("s:unattributed", "unattributed", "unattributed", (
        Text("unattributed", style="dim"), _num(rep.unattributed_chars), Text(""), Text(""), Text("prompt", style="dim"))))
    for p in rep.next_turn.parts:
        note = "not recorded" if p.chars is None else ("next turn" if p.count is None else f"{p.count} messages")
        rows.append(ContextRow(f"t:{p.name}", "turn", p.name, (
            Text(p.title), _num(p.chars), _num(p.tokens), _num(counts.get(p.name) if counts else None),
            Text(note, style="dim"))))
    rows.extend(injected_rows(snap))
    rows.extend(cost_rows(snap))
    for other in view.diffs:
        if other.session_id == d.session_id:
            continue
        if not other.frozen.in_prompt:
            cell = Text("no memory block", style="dim")
        elif other.differences:
            cell = Text(f"{other.differences} differ", style="bold yellow")
        else:
            cell = Text("no difference", style="green")
        name = Text("session ")
        name.append_text(safe_text(other.session_id, single_line=True, max_chars=28))
        rows.append(ContextRow(f"o:{other.session_id}", "session", other.session_id,
                               (name, cell, Text(""), Text(""), safe_text(other.stamp.source, single_line=True,
                                                                         max_chars=12, style="dim")), obj=other))
    return rows


#: How many of the newest user turns the Context panel lists under "injected, turn by turn".
INJECTED_TURNS_SHOWN = 30
_SOURCE_STYLE = {"provider": "cyan", "memlock": "magenta", "plugin": "blue", "unknown": "yellow"}


def _clock(ts: float | None) -> Text:
    if not ts:
        return Text("", style="dim")
    import time as _time

    return Text(_time.strftime("%H:%M:%S", _time.localtime(ts)), style="dim")


def injected_rows(snap: DeckSnapshot) -> list[ContextRow]:
    """The "injected, turn by turn" section of the Context panel: a heading row, then for each of
    the newest :data:`INJECTED_TURNS_SHOWN` user turns one row per part appended to it (its source,
    name, chars, Hermes' token estimate), or one "nothing injected" row; on a Hermes that keeps no
    ``api_content`` one row that says so (:data:`memdeck.core.context.injected.NOT_STORED`)."""
    view = snap.agent_view
    inj = view.injected if view is not None else None
    if inj is None:
        return []
    prov = inj.provider
    head = Text("injected, turn by turn", style="bold")
    where = Text(f"provider {prov}" if prov else "no provider", style="dim")
    quiet = inj.quiet_turns()
    note = Text("")
    if prov and quiet:
        note = Text(f"{quiet} turn{'s' if quiet != 1 else ''} quiet", style="bold yellow")
    rows = [ContextRow("i:head", "injected_head", "injected", (head, note, Text(""), Text(""), where))]
    if not inj.recorded:
        rows.append(ContextRow("i:none", "injected_none", "not recorded", (
            Text("  not recorded by this Hermes", style="yellow"), Text(""), Text(""), Text(""), Text("0.17/0.18", style="dim"))))
        return rows
    if not inj.turns:
        rows.append(ContextRow("i:empty", "injected_none", "no turn", (
            Text("  no user turn since the last compaction", style="dim"), Text(""), Text(""), Text(""), Text(""))))
        return rows
    for t in inj.turns[-INJECTED_TURNS_SHOWN:]:
        if not t.parts:
            rows.append(ContextRow(f"i:{t.turn_id}", "injected_turn", str(t.turn_id), (
                Text(f"  turn #{t.turn_id} · nothing injected", style="dim"), _num(0, "dim"), _num(0, "dim"), Text(""),
                _clock(t.time)), obj=t))
            continue
        for n, part in enumerate(t.parts):
            label = Text(f"  turn #{t.turn_id} · ")
            label.append(part.source, _SOURCE_STYLE.get(part.source, ""))
            if part.name != part.source:  # "memlock", not "memlock memlock"
                label.append(" ")
                label.append_text(safe_text(part.name, single_line=True, max_chars=40))
            rows.append(ContextRow(f"i:{t.turn_id}:{n}", "injected", part.name, (
                label, _num(part.chars), _num(part.tokens), Text(""), _clock(t.time)), obj=part))
    return rows


#: How many of the newest recorded turns the Context panel lists under "cost, turn by turn".
COST_TURNS_SHOWN = 30


def _pct(ratio: float | None) -> str:
    return "—" if ratio is None else f"{ratio * 100:.0f}%"


def cost_rows(snap: DeckSnapshot) -> list[ContextRow]:
    """The "cost, turn by turn" section of the Context panel (issue 37): a heading row with the
    session's cache hit ratio, then one row per recorded turn (newest :data:`COST_TURNS_SHOWN`): its
    cache read, cache write, uncached input and output tokens as the provider reported them, its
    input tokens in the ~tokens column, and where it broke the cache (else its hit ratio)."""
    view = snap.agent_view
    rep = view.report if view is not None else None
    cost = getattr(rep, "cost", None)
    if cost is None:
        return []
    rec = cost.recorded
    note = Text(f"hit {_pct(rec.get('hit_ratio'))}", style="dim") if cost.turns else Text("")
    lb = cost.last_break
    where = Text(f"broke at #{lb.turn}", style="yellow") if lb is not None else Text(cost.kind + " cache", style="dim")
    rows = [ContextRow("c:head", "cost_head", "cost", (Text("cost, turn by turn", style="bold"), note, Text(""),
                                                        Text(""), where))]
    if not cost.turns:
        rows.append(ContextRow("c:none", "cost_none", "not recorded", (
            Text("  no API request recorded", style="dim"), Text(""), Text(""), Text(""), Text("plugin", style="dim"))))
        return rows
    for t in cost.turns[-COST_TURNS_SHOWN:]:
        label = Text(f"  turn #{t.turn} · ")
        label.append(f"read {t.total('cache_read_tokens'):,}", "green")
        label.append(" · ")
        label.append(f"write {t.total('cache_write_tokens'):,}", "yellow" if t.cache_break else "")
        label.append(f" · in {t.total('input_tokens'):,} · out {t.total('output_tokens'):,}", "dim")
        prompt = sum(r.prompt_tokens for r in t.requests)
        cell = (Text(f"✗ {t.cache_break.reason}", style="bold yellow") if t.cache_break
                else Text(f"hit {_pct(t.hit_ratio)}", style="dim"))
        rows.append(ContextRow(f"c:{t.turn}", "cost_turn", str(t.turn), (label, Text(""), _num(prompt), Text(""), cell),
                               obj=t))
    return rows


def _cost_detail(snap: DeckSnapshot, row: ContextRow) -> Text:
    view = snap.agent_view
    cost = getattr(view.report, "cost", None) if view is not None and view.report is not None else None
    t = Text()
    if cost is None:
        return t
    if row.kind == "cost_turn":
        turn = row.obj
        n = len(turn.requests)
        t.append(f"turn #{turn.turn}", "bold")
        t.append(f" · {n} request{'s' if n != 1 else ''} · as the provider reported them (Hermes' post_api_request, "
                 "recorded by memdeck's plugin)\n", "dim")
        if turn.cache_break is not None:
            t.append(f"broke the cache: {turn.cache_break.reason}\n", "bold yellow")
            t.append_text(safe_text(turn.cache_break.detail, style="yellow"))
            t.append("\n")
        for r in turn.requests:
            t.append(f"\n  request {r.api_call_count or '?'}: ", "bold")
            t.append(f"cache read {r.cache_read_tokens:,} · cache write {r.cache_write_tokens:,} · uncached input "
                     f"{r.input_tokens:,} · output {r.output_tokens:,}")
            if r.message_count is not None:
                t.append(f" · {r.message_count} messages", "dim")
        return t
    t.append("cost, turn by turn", "bold")
    t.append(" · what the prompt costs: tokens per turn as the provider reported them, kept in memdeck.db, sent "
             "nowhere\n", "dim")
    if cost.reason:
        t.append_text(safe_text(cost.reason, style="yellow"))
        t.append("\n")
    st, rec = cost.session_totals, cost.recorded
    if st is not None:
        t.append(f"\nstate.db (Hermes' totals): {st['api_calls']:,} calls · input {st['input_tokens']:,} · cache read "
                 f"{st['cache_read_tokens']:,} · cache write {st['cache_write_tokens']:,} · output "
                 f"{st['output_tokens']:,} · hit {_pct(st['hit_ratio'])}")
    if rec.get("requests"):
        t.append(f"\nrecorded by memdeck: {rec['requests']:,} requests · hit {_pct(rec.get('hit_ratio'))}")
    tiers = cost.tiers
    t.append("\n\ntiers: ", "bold")
    if tiers.known:
        t.append(", ".join(f"{s['name']} {s['tier']} (~{s['tokens']:,})" for s in cost.sections))
        t.append(f"\nbreakpoints: {tiers.breakpoints}", "dim")
    else:
        t.append_text(safe_text(tiers.reason, style="yellow"))
    note = cost_note(snap, "memory", 0)
    if note:
        t.append("\n\na memory write now: ", "bold")
        t.append_text(safe_text(note.removeprefix("cost: ")))
    return t


def _injected_detail(snap: DeckSnapshot, row: ContextRow) -> Text:
    view = snap.agent_view
    inj = view.injected if view is not None else None
    t = Text()
    if inj is None:
        return t
    if row.kind in ("injected_head", "injected_none"):
        t.append("injected, turn by turn", "bold")
        t.append(" · what a memory provider and the plugins appended to each user turn before it went to the model "
                 "(messages.api_content)\n", "dim")
        if not inj.recorded:
            t.append_text(safe_text(inj.reason or "", style="yellow"))
            return t
        t.append(f"provider: {inj.provider}" if inj.provider else "no memory provider is configured (memory.provider)")
        q = inj.quiet_turns()
        if inj.provider and q:
            t.append(f"\nthe last {q} user turn{'s' if q != 1 else ''} carried nothing from {inj.provider}", "bold yellow")
        share = view.provider_share if view is not None else None
        if share is not None and inj.provider:
            t.append(f"\nits fences in context: ~{share['tokens']:,} tokens, "
                     f"{percent_text(share['tokens'], share['threshold_tokens'])} of the {share['threshold_tokens']:,} "
                     "at which Hermes compacts", "dim")
        return t
    if row.kind == "injected_turn":
        turn = row.obj
        t.append(f"turn #{turn.turn_id}: nothing injected", "bold")
        if inj.provider:
            t.append(f"\n{inj.provider} appended no <memory-context> to this turn: its prefetch returned nothing, "
                     "failed or timed out", "dim")
        return t
    part = row.obj
    t.append(f"turn #{part.turn_id} · {part.source} ", "bold")
    t.append_text(safe_text(part.name, single_line=True, style="bold"))
    t.append(f" · {part.chars:,} chars · ~{part.tokens:,} tokens (Hermes' estimate)", "dim")
    if part.recalled is not None:
        t.append("\n\nrecalled:\n", "bold")
        t.append_text(safe_text(part.recalled[:6000]))
    t.append("\n\nas appended to the turn:\n", "bold")
    t.append_text(safe_text(part.text[:6000], style="dim" if part.recalled is not None else ""))
    if len(part.text) > 6000:
        t.append(f"\n… {len(part.text) - 6000:,} more chars", "dim")
    return t

def header(snap: DeckSnapshot, exact: ExactCounts | None = None, width: int = 0) -> Text:
    """Three lines over the table: the followed session and its frozen memory; the next
    compaction; which token counts are shown. Each line is cut to ``width`` columns (0: uncut)."""
    view = snap.agent_view
    if view is None:
        return Text("reading state.db…", style="dim")
    if view.report is None:
        if view.followed is not None:
            return Text("reading the session's prompt…", style="dim")
        return Text("no running session: no open session in state.db (s picks one)", style="dim")
    rep = view.report
    s = rep.diff.stamp
    one = Text()
    one.append("session ", "bold")
    one.append_text(safe_text(s.session_id, single_line=True, style="bold"))
    one.append(f" ({s.source})", "dim")
    if rep.prompt is not None:
        one.append(f" · frozen {ago(s.frozen_at, snap.taken_at)}")
    if frozen_badge(snap):
        one.append(" · ")
        one.append(f"{rep.diff.differences} {'entry differs' if rep.diff.differences == 1 else 'entries differ'}",
                   "bold reverse yellow")
    one.append(f" · prompt {rep.prompt_chars:,} chars", "dim")
    two = Text()
    two.append("next compaction: ", "bold")
    nc, why = rep.next_compaction()
    if nc is None:
        two.append_text(safe_text(f"unknown ({why})", single_line=True, style="dim"))
    else:
        pct = percent(nc["estimated_tokens"], nc["threshold_tokens"] or 0)
        two.append(f"~{nc['estimated_tokens']:,} of {nc['threshold_tokens']:,} tokens ({pct}%)",
                   "bold red" if pct >= 90 else ("yellow" if pct >= 75 else ""))
        two.append(f" · {round(nc['threshold_percent'] * 100)}% of {nc['context_length']:,}", "dim")
        two.append(" · Hermes' estimate, tool schemas not recorded", "dim")
    three = Text()
    tok, _c = _exact_for(rep, exact)
    three.append("tokens: ", "bold")
    three.append(f"Hermes {rep.line} estimate", "dim")
    if tok:
        three.append(f" · exact: {tok}", "dim")
    lines = [one, two, three]
    if width > 0:
        for line in lines:
            line.truncate(width, overflow="ellipsis")
    return Text("\n").join(lines)


def delivery_words(row: Mapping[str, Any] | None) -> tuple[str, str] | None:
    """A difference's live-memory state as the Context panel says it, and its style, from one
    :func:`memdeck.core.live_memory.delivery.delivery_rows` row (``memdeck context --json``'s
    ``memory.delivery[]``): ``delivered at turn N (HH:MM:SS)``, ``waiting for the next turn``,
    ``not delivered: <reason>``. None without a row."""
    if not row:
        return None
    state = row.get("state")
    if state == "delivered":
        turn = row.get("turn")
        when = _clock(row.get("at")).plain
        words = "delivered" + (f" at turn {turn}" if turn is not None else "") + (f" ({when})" if when else "")
        if row.get("blocked"):
            words += " as Hermes' [BLOCKED] placeholder"
        return words, "green"
    if state == "waiting":
        return "waiting for the next turn", "cyan"
    return f"not delivered: {row.get('reason') or 'withheld'}", "yellow"


def _diff_text(d: SessionDiff, target: str | None = None, delivery: Mapping[str, Any] | None = None) -> Text:
    """The differences of ``d`` (those of ``target`` when given); ``delivery``: live memory's view of
    this session (:attr:`memdeck.core.overview.agent_view.AgentView.delivery`), whose rows follow
    ``d.frozen.changes`` one for one: each difference then says whether it reached the session."""
    t = Text()
    f = d.frozen
    if not f.in_prompt:
        t.append_text(safe_text(f.reason or "no memory block", style="dim"))
        return t
    rows = list((delivery or {}).get("delivery") or ())
    by_change = dict(zip(map(id, f.changes), rows, strict=False)) if len(rows) == len(f.changes) else {}
    changes = [c for c in f.changes if target is None or c.target == target]
    if not changes:
        t.append("the session sees exactly what the file holds" if target else "the session sees exactly what the files hold",
                 "green")
    for c in changes:
        t.append(f"\n{c.change:<9}", f"bold {_CHANGE_STYLE[c.change]}")
        t.append(f"{'MEMORY' if c.target == 'memory' else 'USER'} · {_CHANGE_WORD[c.change]}", "dim")
        if c.blocked:
            t.append(" · [BLOCKED] in the prompt", "dim red")
        if c.before is not None:
            t.append("\n  − ", "red")
            t.append_text(safe_text(c.before, single_line=True, max_chars=400))
        if c.after is not None:
            t.append("\n  + ", "green")
            t.append_text(safe_text(c.after, single_line=True, max_chars=400))
        said = delivery_words(by_change.get(id(c)))
        if said is not None:
            t.append("\n  live memory: ", "dim")
            t.append_text(safe_text(said[0], single_line=True, style=said[1]))
    for n in f.notes:
        t.append("\nnote: ", "dim")
        t.append_text(safe_text(n, style="dim"))
    if changes:
        t.append("\n\nto see them: ", "bold")
        t.append_text(safe_text(new_session_hint(d.stamp.source)))
    return t


def context_detail(snap: DeckSnapshot, row: ContextRow | None, exact: ExactCounts | None = None) -> Text:
    """The selected row explained: the diff; a section's text; a next-turn part; another session's
    diff. Without a row: what the panel shows."""
    view = snap.agent_view
    if view is None or view.report is None:
        return Text("the Context panel shows what the running session sees: its memory as frozen in its system "
                    "prompt against the files now, the prompt section by section, what the next turn adds and "
                    "when Hermes compacts next", style="dim")
    rep = view.report
    if row is None:
        row = ContextRow("diff", "diff", "diff", ())
    t = Text()
    if row.kind == "diff":
        t.append(f"frozen {ago(rep.diff.stamp.frozen_at, snap.taken_at)} against the files now\n", "bold")
        t.append_text(_diff_text(rep.diff, delivery=view.delivery))
        return t
    if row.kind == "session":
        d = row.obj
        t.append("session ", "bold")
        t.append_text(safe_text(d.session_id, single_line=True, style="bold"))
        t.append(f" ({d.stamp.source}) · frozen {ago(d.stamp.frozen_at, snap.taken_at)}\n", "dim")
        t.append_text(_diff_text(d))
        t.append("\n\ns follows it", "dim")
        return t
    if row.kind in ("section", "unattributed"):
        text = rep.section_text(row.name) if row.kind == "section" else ""
        sec = next((s for s in rep.sections if s.name == row.name), None)
        t.append(sec.title if sec else "unattributed", "bold")
        if sec is None:
            t.append(f" · {rep.unattributed_chars:,} chars: the blank lines between sections, and any text memdeck "
                     "could not place", "dim")
            return t
        if sec is not None:
            t.append(f" · {sec.chars:,} chars · ~{sec.tokens:,} tokens (Hermes' estimate)", "dim")
            tok, counts = _exact_for(rep, exact)
            n = (counts.get("sections") or {}).get(row.name) if counts else None
            if n is not None:
                t.append(f" · {n:,} tokens exactly ({tok})", "dim")
        else:
            t.append(f" · {rep.unattributed_chars:,} chars: the blank lines between sections, and any text memdeck "
                     "could not place", "dim")
        if row.name in ("memory", "user"):
            t.append("\n")
            t.append_text(_diff_text(rep.diff, row.name, view.delivery))
        t.append("\n\n")
        t.append_text(safe_text(text[:6000]) if text else Text("(empty)", style="dim"))
        if len(text) > 6000:
            t.append(f"\n… {len(text) - 6000:,} more chars", "dim")
        return t
    if row.kind.startswith("injected"):
        return _injected_detail(snap, row)
    if row.kind.startswith("cost"):
        return _cost_detail(snap, row)
    part = next((p for p in rep.next_turn.parts if p.name == row.name), None)
    if part is None:
        return t
    t.append(part.title, "bold")
    if part.chars is not None:
        t.append(f" · {part.chars:,} chars · ~{part.tokens:,} tokens", "dim")
    if part.note:
        t.append("\n")
        t.append_text(safe_text(part.note, style="dim"))
    if part.text:
        t.append("\n\n")
        t.append_text(safe_text(part.text[:6000]))
    return t


__all__ = ["ContextRow", "context_detail", "context_rows", "cost_note", "cost_rows", "delivery_words", "differing_count",
           "followed_diff", "frozen_badge", "header", "injected_rows", "pin_cost_note", "unseen_by", "write_note"]
