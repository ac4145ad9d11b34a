"""Helpers every panel's view uses: time words, titled blocks, threat-finding text, tab badges.

Pure functions of core values (no I/O, no Textual). Every data string goes through
:func:`memdeck.tui.safe_text.safe_text`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from rich.text import Text

from memdeck.core.home import TARGETS

from ..safe_text import safe_text

if TYPE_CHECKING:
    from memdeck.core.memory.threats import Finding
    from memdeck.core.overview.snapshot import DeckSnapshot

#: Style of each anchor state word (Anchors table, Integrity summary, anchor detail).
STATE_STYLES = {
    "pinned": "bold cyan",
    "alive": "bold green",
    "drifted": "bold red",
    "rehydrated": "bold yellow",
    "archived": "dim",
    "static": "bold blue",
}


# ── time ────────────────────────────────────────────────────────────────────


def ago(then: float | None, now: float) -> str:
    """``"12 min ago"`` style, from epoch seconds (``"never"`` for None or 0)."""
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
    """Local ``YYYY-MM-DD HH:MM`` of epoch seconds (``"—"`` for None or 0)."""
    if not then:
        return "—"
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(float(then)))


def short_clock(then: float | None, now: float) -> str:
    """Local ``HH:MM:SS`` within a day of ``now``, else ``MM-DD HH:MM`` (``"—"`` for None or 0)."""
    if not then:
        return "—"
    fmt = "%H:%M:%S" if abs(now - float(then)) < 86400 else "%m-%d %H:%M"
    return time.strftime(fmt, time.localtime(float(then)))


# ── blocks ──────────────────────────────────────────────────────────────────


def titled_block(title: str, body: str | None, empty: str, note: str | None = None) -> Text:
    """A bold ``title`` over data text ``body`` (escaped), or over ``empty`` (dim) without one;
    ``note`` (a constant label, dim) goes between them."""
    # One Text, not a Group: Textual sizes a height-auto Static from it reliably (a Group of
    # Texts was measured one line short, which cut the reminder block's overflow line).
    parts = [Text(title, style="bold")] + ([Text(note, style="dim italic")] if note else [])
    parts.append(safe_text(body) if body else Text(empty, style="dim"))
    return Text("\n").join(parts)


def reminder_preview(snap: DeckSnapshot, title: str = "next reminder block") -> Text:
    """The reminder block MemLock would inject next (:attr:`DeckSnapshot.reminder_block`), titled."""
    return titled_block(title, snap.reminder_block, "nothing to re-inject: no drifted anchor")


# ── threat findings ─────────────────────────────────────────────────────────


def findings_for(snap: DeckSnapshot, text: str) -> tuple[Finding, ...]:
    """The threat findings of ``text`` (:attr:`DeckSnapshot.findings`; empty when clean)."""
    return tuple(snap.findings.get(text, ()))


def flag_text(pattern_ids: Iterable[str]) -> Text:
    """``ok`` (green) without pattern ids, else ``⚠ id1,id2`` (sorted, bold red)."""
    ids = sorted(set(pattern_ids))
    if not ids:
        return Text("ok", style="green")
    return Text("⚠ " + ",".join(ids), style="bold red", no_wrap=True, overflow="ellipsis")


def highlighted(text: str, findings: Sequence[Finding]) -> Text:
    """``text`` (escaped) with each finding's ``[start, end)`` span highlighted."""
    return safe_text(text, highlights=[(f.start, max(f.end, f.start + 1)) for f in findings])


def findings_legend(findings: Sequence[Finding], unplaced: Sequence[str] = ()) -> Text:
    """One ``⚠ pattern_id  excerpt`` line per finding, then ``⚠ pattern_id`` for each id of
    ``unplaced`` (patterns found without a span in the shown text)."""
    t = Text()
    for f in findings:
        t.append("\n⚠ ", "bold red")
        t.append(f.pattern_id, "bold")
        if f.excerpt:
            t.append("  ")
            t.append_text(safe_text(f.excerpt, single_line=True, max_chars=80, style="dim"))
    for pid in unplaced:
        t.append("\n⚠ ", "bold red")
        t.append(pid, "bold")
    return t


# ── tab badges ──────────────────────────────────────────────────────────────


def badge_counts(snap: DeckSnapshot) -> dict[str, int]:
    """Counts shown on the tabs: ``anchors`` drifted anchors of the shown session, ``review``
    pending writes plus flagged entries (threat findings), ``capacity`` memory hygiene findings
    from the entries' text alone (duplicate groups, contradiction candidates, wasteful entries:
    :attr:`DeckSnapshot.hygiene_counts`; stale entries are not counted, they depend on this machine),
    ``context`` the entries the followed session's frozen memory differs from the files by, ``drift``
    the rules its compactions lost, weakened or promoted (the constraint ledger).
    Panels without a count are absent (:func:`badge_tooltip` says what each count is)."""

    drifted = sum(1 for r in snap.audit.anchors if r.state == "drifted") if snap.audit is not None else 0
    flagged = 0
    for target in TARGETS:
        state = snap.memory.get(target)
        if state is not None:
            flagged += sum(1 for e in state.entries if snap.findings.get(e.text))
    view = getattr(snap, "agent_view", None)
    fd = view.followed_diff if view is not None else None
    differ = fd.differences if fd is not None and fd.frozen.in_prompt else 0
    hygiene = sum((getattr(snap, "hygiene_counts", None) or {}).values())
    from .constraints import changed_count

    out = {"anchors": drifted, "review": len(snap.pending) + flagged, "capacity": hygiene, "context": differ,
           "drift": changed_count(snap)}
    return {k: v for k, v in out.items() if v}


def badge_tooltip(pid: str, n: int, snap: DeckSnapshot | None = None) -> str | None:
    """What the count ``n`` on the tab of panel ``pid`` is, in words (the tab's tooltip); None
    without a count."""
    if not n:
        return None

    def count(k: int, one: str, many: str) -> str:
        return f"{k} {one if k == 1 else many}"

    if pid == "capacity":
        h = dict(getattr(snap, "hygiene_counts", None) or {}) if snap is not None else {}
        parts = ", ".join(count(h[k], one, many) for k, one, many in (
            ("duplicate", "duplicate group", "duplicate groups"),
            ("contradiction", "contradiction candidate", "contradiction candidates"),
            ("wasteful", "wasteful entry", "wasteful entries")) if h.get(k))
        return (f"{count(n, 'memory hygiene finding', 'memory hygiene findings')}{': ' + parts if parts else ''}, "
                "from the entries' text alone; H shows them with their evidence and proposals (stale entries are "
                "not counted here: they depend on this machine's paths and sessions)")
    if pid == "context":
        return (f"{count(n, 'difference', 'differences')} between the followed session's frozen memory and the "
                "files now")
    if pid == "review":
        return f"{count(n, 'pending write or flagged entry', 'pending writes and flagged entries')} to review"
    if pid == "anchors":
        return f"{count(n, 'drifted anchor', 'drifted anchors')} in the shown session"
    if pid == "drift":
        return (f"{count(n, 'rule', 'rules')} the shown session's compactions lost, weakened or promoted "
                "(the constraint ledger; L shows it)")
    return None
