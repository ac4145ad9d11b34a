"""Pure functions from a :class:`core.snapshot.DeckSnapshot` to rows and Rich renderables.

No I/O, no Textual: unit-testable. Every data string goes through
:func:`tui.safe_text.safe_text`; labels written here are constants.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.console import RenderableType
from rich.text import Text

from memdeck.core.memory.entries import entry_id

from ..safe_text import safe_text

SPARK = "▁▂▃▄▅▆▇█"

STATE_STYLES = {
    "pinned": "bold cyan",
    "alive": "bold green",
    "drifted": "bold red",
    "rehydrated": "bold yellow",
    "archived": "dim",
    "static": "bold blue",
}


def _get(obj: Any, *names: str, default: Any = None) -> Any:
    """The first present attribute / key of ``names`` on ``obj``."""
    if obj is None:
        return default
    for n in names:
        if isinstance(obj, Mapping):
            if n in obj and obj[n] is not None:
                return obj[n]
        else:
            v = getattr(obj, n, None)
            if v is not None:
                return v
    return default


# ── time ────────────────────────────────────────────────────────────────────


def ago(then: float | None, now: float) -> str:
    """``"12 min ago"`` style, from epoch seconds."""
    if not then:
        return "never"
    d = max(0.0, now - float(then))
    if d < 60:
        return f"{int(d)} s ago"
    if d < 3600:
        return f"{int(d // 60)} min ago"
    if d < 86400 * 2:
        return f"{d / 3600:.1f} h ago"
    return f"{int(d // 86400)} d ago"


def clock(then: float | None) -> str:
    if not then:
        return "—"
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(float(then)))


def short_clock(then: float | None, now: float) -> str:
    if not then:
        return "—"
    fmt = "%H:%M:%S" if abs(now - float(then)) < 86400 else "%m-%d %H:%M"
    return time.strftime(fmt, time.localtime(float(then)))


# ── integrity ───────────────────────────────────────────────────────────────


def current_score(snap: Any) -> int | None:
    """The shown session's integrity score: the audit's, else MemLock's stored one."""
    score = _get(snap.audit, "score", "integrity_score")
    if score is None:
        score = _get(snap.session_anchors, "integrity_score")
    try:
        return None if score is None else int(score)
    except (TypeError, ValueError):
        return None


def last_compaction(snap: Any) -> float | None:
    """Epoch seconds of the shown session's last compaction (state.db, else MemLock's file)."""
    times = [float(_get(c, "time", default=0) or 0) for c in getattr(snap, "compactions", ()) or ()]
    if times:
        return max(times)
    return _get(snap.session_anchors, "last_compaction_at")


def integrity_facts(snap: Any, now: float) -> Text:
    floor = int(snap.config.memlock.alert_floor)
    score = current_score(snap)
    t = Text()
    t.append("session   ", "dim")
    if snap.partial:
        t.append("reading state.db and the anchors… (memory is shown already)", "bold cyan")
    elif snap.session_id:
        t.append_text(safe_text(snap.session_id, single_line=True, style="bold"))
        live_id = _get(snap.live_session, "id")
        if live_id and live_id == snap.session_id:
            t.append("  ● live", "green")
    else:
        t.append("none (no live session, no MemLock session file)", "dim")
    t.append("\nfloor     ", "dim")
    t.append(f"{floor}")
    if score is not None:
        if score < floor:
            t.append(f"  ▼ {floor - score} below the floor", "bold red")
        else:
            t.append("  ✓ at or above the floor", "green")
    elif snap.session_id:
        waiting = [str(_get(r, "anchor").id) for r in (_get(snap.audit, "anchors", default=()) or ())
                   if _get(r, "state") == "pinned"]
        t.append("  no audit yet", "bold yellow")
        if waiting:
            shown = ", ".join(waiting[:4]) + (f" +{len(waiting) - 4}" if len(waiting) > 4 else "")
            t.append(" · waiting: ", "dim")
            t.append_text(safe_text(shown, single_line=True, max_chars=80))
    lc = last_compaction(snap)
    t.append("\ncompacted ", "dim")
    if lc:
        t.append(f"{clock(lc)}  ({ago(lc, now)})")
    else:
        t.append("never")
        if score is not None:  # MemLock scores at a compaction; this is the audit run now
            t.append(" · the score is what an audit would give now", "dim")
    n = len(getattr(snap, "compactions", ()) or ()) or _get(snap.audit, "compactions", default=0)
    if n:
        t.append(f"  · {n} compaction{'s' if n != 1 else ''}", "dim")
    t.append("\ndetection ", "dim")
    t.append(f"{_get(snap.audit, 'method', default=snap.config.memlock.detection)} · inject {snap.config.memlock.inject}")
    if snap.db_status is None and not snap.partial and snap.session_id:
        t.append("\nstate.db  ", "dim")
        t.append("none in this home: MemLock's own score and drifted flags are shown, no audit of "
                 "the active region", "yellow")
    return t


def hermes_health(snap: Any) -> Text:
    """The health line of the Integrity panel: which Hermes wrote the home (version, schema,
    where the version came from), state.db's state, then every degradation spelled out (one
    line each, from :attr:`DeckSnapshot.hermes_profile`) and the notes, dim."""
    t = Text()
    prof = getattr(snap, "hermes_profile", None)
    st = _get(snap.db_status, "state") if snap.db_status is not None else None
    t.append("hermes    ", "dim")
    if prof is None:
        t.append("not detected", "yellow")
    else:
        t.append_text(safe_text(f"Hermes {prof.version}" if prof.version else "Hermes version unknown", single_line=True))
        detail = [f"schema {prof.schema_version}" if prof.schema_version is not None else "no state.db schema"]
        if prof.version_source:
            detail.append(f"from {prof.version_source}")
        t.append_text(safe_text(" (" + ", ".join(detail) + ")", single_line=True, style="dim"))
    if st is not None:
        t.append("\nstate.db  ", "dim")
        t.append_text(safe_text(str(st), single_line=True, style="green" if st == "ok" else "bold red"))
        if st != "ok":
            t.append_text(safe_text(" · " + str(_get(snap.db_status, "message", default="")), single_line=True, style="red"))
    degradations = tuple(getattr(prof, "degradations", ()) or ())
    if prof is not None:
        if degradations:
            t.append(f" · {len(degradations)} degradation{'s' if len(degradations) != 1 else ''}", "bold yellow")
        else:
            t.append(" · fully supported", "green")
    for d in degradations:
        t.append("\n  ! ", "bold yellow")
        t.append_text(safe_text(d, style="yellow"))
    for n in tuple(getattr(prof, "notes", ()) or ()):
        t.append("\n  · ", "dim")
        t.append_text(safe_text(n, style="dim"))
    return t


def verdicts_for(snap: Any, where: str, texts: Sequence[str]) -> Mapping[str, Any] | None:
    """The threat verdict difference (memdeck vs the loading Hermes) for a place and its texts."""
    for d in getattr(snap, "threat_differences", ()) or ():
        if d.get("where") == where and d.get("text") in texts:
            return d
    return None


def sparkline(history: Sequence[tuple[float, int]], floor: int, width: int) -> Text:
    """Scores 0-100 as block characters (fixed scale), red below ``floor``; newest at right."""
    if not history:
        return Text("no audits yet: the score appears after the first compaction", style="dim")
    pts = list(history)[-max(1, width // 2):]
    t = Text()
    for _when, score in pts:
        s = max(0, min(100, int(score)))
        ch = SPARK[min(len(SPARK) - 1, s * len(SPARK) // 101)]
        t.append(ch + " ", "red" if s < floor else "green")
    t.append(f"  {pts[0][1]} → {pts[-1][1]}", "dim")
    return t


def anchor_summary(snap: Any) -> Text:
    rows = anchor_rows(snap)
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.state] = counts.get(r.state, 0) + 1
    t = Text("anchors   ", style="dim")
    if not rows:
        t.append("none", "dim")
        return t
    first = True
    for state in ("pinned", "alive", "drifted", "rehydrated", "static", "archived"):
        if counts.get(state):
            if not first:
                t.append(" · ")
            t.append(f"{counts[state]} {state}", STATE_STYLES.get(state, ""))
            first = False
    return t


def titled_block(title: str, body: str | None, empty: str, note: str | None = None) -> RenderableType:
    """A bold ``title`` over data text ``body`` (escaped), or over ``empty`` (dim) without one;
    ``note`` (a constant label, dim) goes between them."""
    # One Text, not a Group: Textual sizes a height-auto Static from it reliably (a Group of
    # Texts was measured one line short, which cut the reminder block's overflow line).
    parts = [Text(title, style="bold")] + ([Text(note, style="dim italic")] if note else [])
    parts.append(safe_text(body) if body else Text(empty, style="dim"))
    return Text("\n").join(parts)


def reminder_preview(snap: Any, title: str = "next reminder block") -> RenderableType:
    block = getattr(snap, "reminder_block", "") if snap is not None else ""
    return titled_block(title, block, "nothing to re-inject: no drifted anchor")


# ── anchors ─────────────────────────────────────────────────────────────────


@dataclass
class AnchorRow:
    key: str
    anchor_id: str
    session_id: str | None
    state: str
    priority: int
    hits: int | None
    probes: tuple[str, ...]
    missing: tuple[str, ...]
    scope: str
    reminder: str
    text: str
    obj: Any = None
    history: int = 0
    at_last: Any = None
    rehydrated_by: int | None = None

    @property
    def cells(self) -> tuple[Any, ...]:
        probes = f"{self.hits}/{len(self.probes)}" if self.hits is not None else f"–/{len(self.probes)}"
        return (
            Text(self.state, style=STATE_STYLES.get(self.state, "")),
            Text(str(self.priority), justify="right"),
            Text(probes, justify="right"),
            Text(self.scope),
            safe_text(self.anchor_id, single_line=True),
            safe_text(self.reminder, single_line=True, max_chars=200),
        )


def _anchor_audit(audit: Any, aid: str) -> Any:
    """The :class:`core.audit.AnchorAudit` of anchor ``aid`` (None without an audit)."""
    for aa in _get(audit, "anchors", default=()) or ():
        if str(getattr(getattr(aa, "anchor", None), "id", "")) == aid:
            return aa
    return None


def anchor_rows(snap: Any) -> list[AnchorRow]:
    """Live anchors sorted as MemLock re-injects them (priority desc, id asc), then archived."""
    sa = snap.session_anchors
    rows: list[AnchorRow] = []
    if sa is not None:
        audited = {str(aa.anchor.id): aa for aa in _get(snap.audit, "anchors", default=()) or ()}
        anchors = [aa.anchor for aa in audited.values()] if audited else sa.sorted_anchors()
        for a in anchors:
            aa = audited.get(a.id)
            v = getattr(aa, "verdict", None)
            if aa is not None:
                state = aa.state
            else:  # no audit (no state.db): MemLock's own flag is all there is
                state = "drifted" if a.drifted else "pinned"
            hits = getattr(v, "hits", None)
            missing = tuple(getattr(v, "missing", ()) or ())
            scope = getattr(aa, "scope", None) or ("global" if a.id in snap.global_ids else "session")
            if not a.pinned:
                scope = f"{scope}·static"
            rows.append(
                AnchorRow(
                    key=f"a:{a.id}",
                    anchor_id=a.id,
                    session_id=sa.session_id,
                    state=str(state),
                    priority=int(a.priority),
                    hits=None if hits is None else int(hits),
                    probes=tuple(getattr(v, "probes", None) or a.probes),
                    missing=missing,
                    scope=scope,
                    reminder=a.reminder,
                    text=a.text,
                    obj=a,
                    history=len(a.history or ()),
                    at_last=getattr(aa, "at_last_compaction", None),
                    rehydrated_by=getattr(aa, "rehydrated_message_id", None),
                )
            )
    for rec in snap.archived:
        if str(_get(rec, "kind", default="")) != "anchor":
            continue
        payload = _get(rec, "payload", default={}) or {}
        if snap.session_id and str(payload.get("session_id", "")) != snap.session_id:
            continue
        a = payload.get("anchor") or {}
        aid = str(a.get("id", _get(rec, "key", default="?")))
        rid = str(_get(rec, "id", "archive_id", default=aid))
        rows.append(
            AnchorRow(
                key=f"x:{rid}",
                anchor_id=aid,
                session_id=str(payload.get("session_id", "")) or None,
                state="archived",
                priority=int(a.get("priority", 0) or 0),
                hits=None,
                probes=tuple(str(p) for p in a.get("probes", []) or []),
                missing=(),
                scope=str(payload.get("scope", "session")),
                reminder=str(a.get("reminder", "")),
                text=str(a.get("text", "")),
                obj=rec,
            )
        )
    return rows


def anchor_detail(r: AnchorRow) -> RenderableType:
    t = Text()
    t.append(r.state.upper(), STATE_STYLES.get(r.state, "bold"))
    t.append("  ")
    t.append_text(safe_text(r.anchor_id, single_line=True, style="bold"))
    t.append(f"  priority {r.priority} · {r.scope}")
    if r.history:
        t.append(f" · {r.history} earlier version{'s' if r.history != 1 else ''}", "dim")
    t.append("\n")
    t.append_text(safe_text(r.text))
    t.append("\nreminder: ", "dim")
    t.append_text(safe_text(r.reminder))
    t.append("\nprobes:   ", "dim")
    missing = set(r.missing)
    for i, p in enumerate(r.probes):
        if i:
            t.append(" ")
        t.append_text(safe_text(p, single_line=True, style="red strike" if p in missing else "green"))
    if r.missing:
        t.append("\nmissing from the active region: ", "dim")
        t.append_text(safe_text(", ".join(r.missing), style="red"))
    if r.rehydrated_by is not None:
        t.append(f"\nreminder re-injected in message {r.rehydrated_by}", "yellow")
    return t


# ── drift log ───────────────────────────────────────────────────────────────


@dataclass
class DriftRow:
    key: str
    when: str
    time: float
    score: int | None
    casualties: tuple[str, ...]
    event: Any
    cells: tuple[Any, ...] = ()


def drift_rows(snap: Any, now: float) -> list[DriftRow]:
    floor = int(snap.config.memlock.alert_floor)
    rows = []
    n = len(snap.drift_log)
    for i, ev in enumerate(snap.drift_log):
        when = float(ev.get("time") or 0.0)
        score = ev.get("score")
        cas = tuple(str(c) for c in ev.get("casualties") or ())
        stext = Text("—" if score is None else str(score), justify="right",
                     style="bold red" if isinstance(score, (int, float)) and score < floor else "green")
        cells = (
            Text(short_clock(when, now)),
            stext,
            Text(str(len(cas)), justify="right", style="red" if cas else "dim"),
            safe_text(", ".join(cas) if cas else "—", single_line=True, max_chars=200),
        )
        rows.append(DriftRow(f"e:{when!r}:{ev.get('event_index', '')}", short_clock(when, now), when, score, cas, ev, cells))
    return rows


def drift_detail(snap: Any, r: DriftRow, now: float) -> RenderableType:
    t = Text()
    t.append(f"audit at {clock(r.time)} ({ago(r.time, now)}) · score ", "")
    t.append("—" if r.score is None else str(r.score), "bold")
    src = r.event.get("source")
    if src:
        t.append(f" · from {src}", "dim")
    comp = _event_compaction(snap, r.event)
    t.append("\ncompaction cut: ", "dim")
    if comp is None:
        t.append("no compaction in state.db matches this audit (a safety-net audit, or an older event)", "dim")
    else:
        mode = str(_get(comp, "mode", default="?")).replace("_", "-")
        t.append(f"#{_get(comp, 'index', default='?')} {mode} at {clock(_get(comp, 'time'))}")
        arch = _get(comp, "archived_count")
        if arch is not None:
            t.append(f" · {arch} messages summarised away")
        first, last = _get(comp, "region_first_id"), _get(comp, "region_last_id")
        if first is not None:
            t.append(f"\n   the active region after it starts at message id {first}")
            if last is not None and last != first:
                t.append(f" (head + summary + kept tail: ids {first}-{last})")
        sm = _get(comp, "summary_message_id")
        if sm is not None:
            t.append(f"\n   summary in message {sm}")
        child = _get(comp, "child_session_id")
        if child:
            t.append("\n   continued in session ")
            t.append_text(safe_text(child, single_line=True))
    if not r.casualties:
        t.append("\nno casualties: every anchor was alive", "green")
        return t
    rows = {ar.anchor_id: ar for ar in anchor_rows(snap)}
    for aid in r.casualties:
        t.append("\n✗ ", "red")
        t.append_text(safe_text(aid, single_line=True, style="bold"))
        ar = rows.get(aid)
        if ar is None:
            t.append("  (no longer in this session)", "dim")
            continue
        t.append("  ")
        t.append_text(safe_text(ar.reminder, single_line=True, max_chars=120))
        at_last = ar.at_last
        if at_last is not None and comp is not None and comp is (list(getattr(snap, "compactions", ()) or ()) or [None])[-1]:
            missing, label = tuple(getattr(at_last, "missing", ()) or ()), "missing after this compaction"
        else:
            missing, label = ar.missing or (), "missing now"
        if missing:
            t.append(f"\n   {label}: ", "dim")
            t.append_text(safe_text(", ".join(missing), style="red"))
        elif ar.probes:
            t.append("\n   probes: ", "dim")
            t.append_text(safe_text(", ".join(ar.probes)))
    return t


def _event_compaction(snap: Any, event: Mapping[str, Any]) -> Any:
    """The state.db compaction event an audit point belongs to (by ``event_index``, else the
    last compaction at or before its time)."""
    comps = list(getattr(snap, "compactions", ()) or ())
    idx = event.get("event_index")
    if idx is not None:
        for c in comps:
            if _get(c, "index") == idx:
                return c
    when = float(event.get("time") or 0.0)
    before = [c for c in comps if float(_get(c, "time", default=0) or 0) <= when + 1e-6]
    if before:
        return max(before, key=lambda c: float(_get(c, "time", default=0) or 0))
    return None


# ── capacity ────────────────────────────────────────────────────────────────


def _entries(state: Any) -> list[Any]:
    return list(_get(state, "entries", default=()) or ())


def entry_text(entry: Any) -> str:
    if isinstance(entry, str):
        return entry
    return str(_get(entry, "text", "content", default=""))


def usage_of(snap: Any, target: str) -> tuple[int, int]:
    """``(chars used, char limit)`` of ``target`` from the core's memory state."""
    state = snap.memory.get(target)
    limit = _get(state, "limit", "char_limit", default=None)
    if limit is None:
        limit = snap.config.char_limit(target)
    used = _get(state, "chars", default=0)
    if not isinstance(used, int):
        used = 0
    return int(used), int(limit)


def usage_bar(snap: Any, target: str, width: int) -> Text:
    name = "MEMORY.md" if target == "memory" else "USER.md  "
    state = snap.memory.get(target)
    t = Text()
    t.append(f"{name} ", "bold")
    if state is None:
        t.append("unavailable", "red")
        return t
    used, limit = usage_of(snap, target)
    pct = 0 if limit <= 0 else used * 100 / limit
    shown_pct = _get(state, "pct")  # Hermes' own rounding (the prompt block header shows it)
    pct_text = f"{shown_pct}%" if isinstance(shown_pct, int) else f"{pct:.0f}%"
    label = f"{pct_text:>4}  {used:,}/{limit:,} chars · {len(_entries(state))} entries"
    # the numbers first: on a narrow terminal the bar shrinks (to nothing), never the numbers
    bar_w = max(0, width - len(name) - 1 - len(label) - 2)
    filled = min(bar_w, int(round(bar_w * min(pct, 100) / 100)))
    style = "red" if pct >= 90 else ("yellow" if pct >= 75 else "green")
    t.append(label, "bold red" if pct > 100 else "")
    if bar_w >= 4:
        t.append("  ")
        t.append("█" * filled, style)
        t.append("░" * (bar_w - filled), "dim")
    n = len(_entries(state))
    if n > MAX_ENTRY_ROWS or getattr(state, "unscanned", 0):
        t.append("\n  ⚠ ", "bold red")
        far = f"{used // max(1, limit):,}x its limit" if limit and used > limit else "very large"
        t.append(f"far over its char limit ({far}): ", "bold red")
        t.append(f"the first {min(n, MAX_ENTRY_ROWS):,} of {n:,} entries are listed", "red")
        if getattr(state, "unscanned", 0):
            t.append(f", {state.unscanned:,} not threat-scanned", "red")
    drift = _get(state, "drift")
    if drift:
        t.append("\n  ⚠ ", "bold yellow")
        t.append_text(safe_text(f"does not round-trip: {drift} (Hermes refuses replace/remove until it is normalized)", single_line=True, style="yellow"))
    return t


@dataclass
class EntryRow:
    key: str
    target: str
    index: int
    text: str
    chars: int
    findings: tuple[Any, ...]
    entry: Any
    cells: tuple[Any, ...] = ()


def findings_for(snap: Any, text: str, entry: Any = None) -> tuple[Any, ...]:
    own = _get(entry, "findings")
    if own is not None and not isinstance(entry, str):
        return tuple(own)
    fm = getattr(snap, "findings", None) or {}
    return tuple(fm.get(text, ()))


def flag_text(findings: Sequence[Any]) -> Text:
    if not findings:
        return Text("ok", style="green")
    ids = sorted({str(_get(f, "pattern_id", "id", default="?")) for f in findings})
    return Text("⚠ " + ",".join(ids), style="bold red", no_wrap=True, overflow="ellipsis")


#: The most entries of one file listed in Capacity (a file far over its limit can hold 200,000;
#: a table of that many rows would hold the UI thread for a minute). The bar says how many more.
MAX_ENTRY_ROWS = 2000


def entry_rows(snap: Any) -> list[EntryRow]:
    rows = []
    for target in ("memory", "user"):
        for i, e in enumerate(_entries(snap.memory.get(target))[:MAX_ENTRY_ROWS], 1):
            text = entry_text(e)
            eid = _get(e, "id", "entry_id", default=None) if not isinstance(e, str) else None
            key = f"{target}:{eid or i}"
            fnd = findings_for(snap, text, e)
            flags = flag_text(fnd) if _get(e, "scanned", default=True) else Text("not scanned", style="dim")
            cells = (
                Text("MEMORY" if target == "memory" else "USER", style="bold"),
                Text(str(i), justify="right"),
                Text(str(eid or entry_id(text)), style="dim"),  # the id the CLI takes
                Text(f"{len(text):,}", justify="right"),
                flags,
                safe_text(text, single_line=True, max_chars=300),
            )
            rows.append(EntryRow(key, target, i, text, len(text), fnd, e, cells))
    return rows


def highlighted(text: str, findings: Sequence[Any]) -> Text:
    spans = []
    for f in findings:
        s, e = _get(f, "start"), _get(f, "end")
        if isinstance(s, int) and isinstance(e, int):
            spans.append((s, max(e, s + 1)))
    return safe_text(text, highlights=spans)


def findings_legend(findings: Sequence[Any]) -> Text:
    t = Text()
    for f in findings:
        t.append("\n⚠ ", "bold red")
        t.append(str(_get(f, "pattern_id", "id", default="?")), "bold")
        exc = _get(f, "excerpt")
        if exc:
            t.append("  ")
            t.append_text(safe_text(exc, single_line=True, max_chars=80, style="dim"))
    return t


def capacity_detail(snap: Any, r: EntryRow | None) -> RenderableType:
    parts: list[Text] = []
    if r is not None:
        head = Text()
        head.append(f"{'MEMORY.md' if r.target == 'memory' else 'USER.md'} entry {r.index} · {r.chars:,} chars", "bold")
        parts.append(head)
        body = highlighted(r.text, r.findings)
        body.append_text(findings_legend(r.findings))
        parts.append(body)
        parts.append(Text(""))
    note = None
    if "[BLOCKED:" in (snap.prompt_blocks or ""):
        note = ("flagged entries go in as [BLOCKED: …] placeholders, and the header's usage counts them: "
                "it can differ from the bars above")
    parts.append(titled_block("next session's frozen prompt block", snap.prompt_blocks, "(empty: nothing will be injected)", note))
    return Text("\n").join(parts)


# ── recall ──────────────────────────────────────────────────────────────────


def _hits(result: Any) -> list[Any]:
    if result is None:
        return []
    if isinstance(result, (list, tuple)):
        return list(result)
    return list(_get(result, "hits", default=()) or ())


def recall_results(result: Any, query: str, now: float) -> RenderableType:
    """Recall hits (:class:`core.recall.RecallHit`) grouped by session lineage, each with the
    message before and after the match; the match highlighted."""
    hits = _hits(result)
    if not query.strip():
        return Text("type a query to preview what session recall would find", style="dim")
    excluded = _get(result, "excluded_session_id")
    note = Text()
    if _get(result, "partial"):
        note.append("newest first so far; ranking them as Hermes' session_search would…\n", "dim italic")
    if excluded:
        note.append("the live session ", "dim")
        note.append_text(safe_text(excluded, single_line=True, max_chars=40, style="dim"))
        note.append(" is left out, as Hermes' session_search leaves out the session it runs in\n", "dim")
    if not hits:
        return note + Text("no matches", style="dim")
    groups: dict[str, list[Any]] = {}
    for h in hits:
        groups.setdefault(str(_get(h, "lineage_root", "session_id", default="?")), []).append(h)
    t = note.copy()
    for gi, (root, items) in enumerate(groups.items()):
        if gi:
            t.append("\n")
        first = items[0]
        t.append("▌ ", "bold cyan")
        title = _get(first, "title")
        t.append_text(safe_text(title or root, single_line=True, max_chars=70, style="bold"))
        t.append("  ")
        t.append_text(safe_text(root, single_line=True, style="dim"))
        src = _get(first, "source")
        started = _get(first, "started_at")
        meta = " · ".join(x for x in (str(src) if src else "", clock(started) if started else "") if x)
        if meta:
            t.append(f"  {meta}", "dim")
        t.append("\n")
        for h in items:
            sid = str(_get(h, "session_id", default=root))
            if sid != root:
                t.append("  in ", "dim")
                t.append_text(safe_text(sid, single_line=True, style="dim"))
                t.append("\n")
            ctx = list(_get(h, "context", default=()) or ())
            matched = str(_get(h, "matched_role", default=""))
            shown_match = False
            for c in ctx:
                role = str(c.get("role", "")) if isinstance(c, Mapping) else ""
                content = str(c.get("content", "")) if isinstance(c, Mapping) else str(c)
                is_match = not shown_match and role == matched and _unmark(_get(h, "snippet", default="")).strip()[:20] in content
                if is_match:
                    shown_match = True
                    t.append(f"  ▸ {role}: ", "bold")
                    t.append_text(snippet_text(h, query))
                else:
                    t.append(f"    {role}: ", "dim")
                    if content.strip():
                        t.append_text(safe_text(content, single_line=True, max_chars=160, style="dim"))
                    else:
                        t.append("(no text: a tool call)", "dim italic")
                t.append("\n")
            if not shown_match:
                t.append(f"  ▸ {matched}: ", "bold")
                t.append_text(snippet_text(h, query))
                t.append("\n")
            if _get(h, "compacted"):
                t.append("    (this message was compacted away from the live context)\n", "yellow")
    return t


def _unmark(s: str) -> str:
    return str(s).replace(">>>", "").replace("<<<", "")


def snippet_text(hit: Any, query: str) -> Text:
    """A recall snippet, literal, with the FTS5 match (between ``>>>`` and ``<<<``) highlighted;
    without markers, every case-insensitive occurrence of each query word."""
    raw = str(_get(hit, "snippet", "text", "content", default=""))
    hl: list[tuple[int, int, str]] = []
    style = "bold reverse yellow"
    if ">>>" in raw and "<<<" in raw:
        out, i = [], 0
        pos = 0
        while i < len(raw):
            if raw.startswith(">>>", i):
                j = raw.find("<<<", i + 3)
                if j < 0:
                    out.append(raw[i:])
                    break
                seg = raw[i + 3 : j]
                hl.append((pos, pos + len(seg), style))
                out.append(seg)
                pos += len(seg)
                i = j + 3
            else:
                out.append(raw[i])
                pos += 1
                i += 1
        snippet = "".join(out)
    else:
        snippet = raw
        low = snippet.lower()
        for word in {w for w in query.lower().split() if len(w) >= 2}:
            start = 0
            while (k := low.find(word, start)) >= 0:
                hl.append((k, k + len(word), style))
                start = k + len(word)
    return safe_text(snippet, single_line=True, max_chars=240, highlights=hl)


def fence_preview(snap: Any, result: Any, query: str) -> RenderableType:
    fence = _get(result, "memory_context", "fence", default=None) or (getattr(snap, "memory_context", "") if snap else "")
    return titled_block("<memory-context> preview (appended to the user message)", fence,
                        "run a query to preview the fenced block")


# ── review ──────────────────────────────────────────────────────────────────


@dataclass
class ReviewRow:
    key: str
    kind: str
    ident: str
    target: str | None
    action: str
    text: str
    findings: tuple[Any, ...]
    obj: Any
    created_at: float | None = None
    cells: tuple[Any, ...] = ()
    extra: list[str] = field(default_factory=list)
    verdicts: Mapping[str, Any] | None = None  # memdeck's vs the loading Hermes' verdict, when they differ


def pending_text(p: Any) -> str:
    payload = _get(p, "payload", default={}) or {}
    parts = []
    for key in ("content", "old_text"):
        v = payload.get(key) if isinstance(payload, Mapping) else None
        if v:
            parts.append(str(v))
    ops = payload.get("operations") if isinstance(payload, Mapping) else None
    if isinstance(ops, list):
        for op in ops:
            if isinstance(op, Mapping):
                parts.append(f"{op.get('action', '?')}: {op.get('content') or op.get('old_text') or ''}")
    if not parts:
        parts.append(str(_get(p, "summary", default="")))
    return "\n".join(parts)


def review_rows(snap: Any, now: float) -> list[ReviewRow]:
    rows = []
    for p in snap.pending:
        pid = str(_get(p, "id", "pending_id", default="?"))
        payload = _get(p, "payload", default={}) or {}
        target = _get(p, "target") or (payload.get("target") if isinstance(payload, Mapping) else None)
        action = str(_get(p, "action") or (payload.get("action", "?") if isinstance(payload, Mapping) else "?"))
        text = str(_get(p, "text", default="") or pending_text(p))
        fnd = findings_for(snap, text)
        if not fnd and _get(p, "threats"):
            fnd = tuple({"pattern_id": t} for t in p.threats)
        cells = (
            Text("pending", style="yellow"),
            safe_text(pid, single_line=True),
            Text(str(target or "?")),
            Text(action),
            flag_text(fnd),
            safe_text(text, single_line=True, max_chars=200),
        )
        diff = None
        for d in getattr(snap, "threat_differences", ()) or ():
            if d.get("where") == f"pending {pid}":
                diff = d
                break
        rows.append(ReviewRow(f"p:{pid}", "pending", pid, target, action, text, fnd, p, _get(p, "created_at"), cells,
                              verdicts=diff))
    for er in entry_rows(snap):
        diff = verdicts_for(snap, er.target, (er.text,))
        if not er.findings and not diff:
            continue
        cells = (
            Text("flagged", style="bold red"),
            Text(f"#{er.index}"),
            Text(er.target),
            Text("entry"),
            flag_text(er.findings),
            safe_text(er.text, single_line=True, max_chars=200),
        )
        rows.append(ReviewRow(f"f:{er.key}", "flagged", f"#{er.index}", er.target, "entry", er.text, er.findings, er.entry,
                              None, cells, verdicts=diff))
    return rows


def review_detail(r: ReviewRow) -> RenderableType:
    t = Text()
    if r.kind == "pending":
        malformed = _get(r.obj, "malformed")
        if malformed:
            t.append("malformed: ", "bold red")
            t.append_text(safe_text(malformed, single_line=True))
            t.append("\n")
        t.append("pending write ", "bold yellow")
        t.append_text(safe_text(r.ident, single_line=True, style="bold"))
        t.append(f" · {r.action} → {r.target or '?'}")
        origin = _get(r.obj, "origin")
        if origin:
            t.append(" · from ", "dim")
            t.append_text(safe_text(origin, single_line=True))
        summary = _get(r.obj, "summary")
        if summary:
            t.append("\n")
            t.append_text(safe_text(summary, style="italic"))
        if r.findings:
            t.append("\nA would be refused (the threat scan flags it, below); X rejects it\n", "bold red")
        else:
            t.append("\nA approves, X rejects\n", "dim")
    else:
        t.append("flagged entry ", "bold red")
        t.append(f"{r.ident} in {'MEMORY.md' if r.target == 'memory' else 'USER.md'}")
        v = r.verdicts
        if v is not None and not v.get("hermes"):
            t.append(" · the Hermes that loads it does not flag it: it goes into the next system prompt as is\n", "dim")
        else:
            t.append(" · Hermes replaces it with [BLOCKED: …] in the next system prompt\n", "dim")
    if r.verdicts is not None:
        v = r.verdicts
        t.append("verdicts differ: ", "bold yellow")
        t.append_text(safe_text("memdeck (strict) " + (", ".join(v.get("memdeck") or ()) or "clean") + " · Hermes "
                                + (", ".join(v.get("hermes") or ()) or "clean"), single_line=True))
        t.append("\nrules applied: ", "dim")
        t.append_text(safe_text(str(v.get("rules_text") or ""), style="dim"))
        t.append("\n")
    t.append_text(highlighted(r.text, r.findings))
    t.append_text(findings_legend(r.findings))
    return t


# ── tab badges ──────────────────────────────────────────────────────────────


def badge_counts(snap: Any) -> dict[str, int]:
    """Counts shown on the tabs: ``anchors`` drifted anchors of the shown session, ``review``
    pending writes plus flagged entries (threat findings). Panels without a count are absent."""
    drifted = sum(1 for r in (_get(snap.audit, "anchors", default=()) or ()) if _get(r, "state") == "drifted")
    flagged = 0
    for target in ("memory", "user"):
        for e in _entries(snap.memory.get(target)):
            text = e if isinstance(e, str) else str(_get(e, "text", default=""))
            if snap.findings.get(text):
                flagged += 1
    out = {"anchors": drifted, "review": len(snap.pending) + flagged}
    return {k: v for k, v in out.items() if v}
