"""The History panel's rows and detail: every recorded change to memory and anchors, by any
writer, newest first, with a word diff.

Pure functions of a :class:`memdeck.core.overview.snapshot.DeckSnapshot` (no widgets).
"""

from __future__ import annotations

import difflib
import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.text import Text

from memdeck.core.context.new_session import new_session_hint
from memdeck.core.history.changes import Change

from ..safe_text import safe_text

from .context import unseen_by

if TYPE_CHECKING:
    from memdeck.core.overview.snapshot import DeckSnapshot

_OP_STYLE = {"added": "green", "removed": "red", "replaced": "yellow", "anchor_added": "green",
             "anchor_removed": "red", "anchor_changed": "yellow"}


@dataclass
class HistoryRow:
    """One change as a table row (``key`` = ``c:<change id>``)."""

    key: str
    change: Change
    cells: tuple[Any, ...]

    @property
    def text(self) -> str:
        return self.change.before or self.change.after or ""


def who(c: Change) -> str:
    """Who made the change, in words: memdeck's actor, Hermes with its session and platform,
    an applied pending write, or "external"."""
    a = c.attribution or {}
    if c.actor == "hermes":
        where = " ".join(str(x) for x in (a.get("source"), a.get("session_id")) if x)
        return f"hermes {where}".strip()
    if c.actor == "pending":
        return f"pending {a.get('pending_id') or ''}".strip()
    if c.by_memdeck:
        return f"memdeck {c.actor}"
    return c.actor or "external"


def _where(c: Change) -> str:
    if c.kind == "memory":
        return "MEMORY.md" if c.target == "memory" else "USER.md"
    return f"anchor {c.anchor_id or ''} ({c.where})".strip()


def history_rows(snap: DeckSnapshot) -> list[HistoryRow]:
    """One row per change of :attr:`DeckSnapshot.history` (newest first)."""
    rows = []
    for c in snap.history:
        when = time.strftime("%m-%d %H:%M:%S", time.localtime(c.until))
        op = Text(c.op, style=_OP_STYLE.get(c.op, ""))
        if c.reverted_by is not None:
            op.append(" (reverted)", "dim")
        unseen = unseen_by(snap, c)
        if unseen:
            op.append(" · not yet seen", "bold yellow")
        cells = (
            Text(str(c.change_id), justify="right"),
            Text(when),
            safe_text(who(c), single_line=True, max_chars=40),
            safe_text(_where(c), single_line=True, max_chars=40),
            op,
            safe_text(c.after if c.op in ("added", "anchor_added") else (c.before or c.after or ""),
                      single_line=True, max_chars=200),
        )
        rows.append(HistoryRow(f"c:{c.change_id}", c, cells))
    return rows


def _texts(c: Change) -> tuple[str, str]:
    def show(v: str | None) -> str:
        if v is None:
            return ""
        if c.kind != "memory":
            try:
                d = json.loads(v)
                return "\n".join(f"{k}: {d[k]}" for k in ("text", "reminder", "priority", "probes") if k in d)
            except (ValueError, TypeError):
                return v
        return v

    return show(c.before), show(c.after)


def diff_text(c: Change) -> Text:
    """Before -> after, word by word: removed words red and struck, added words green."""
    before, after = _texts(c)
    a, b = before.split(" "), after.split(" ")
    t = Text()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            t.append_text(safe_text(" ".join(a[i1:i2]) + " "))
            continue
        if i2 > i1:
            t.append_text(safe_text(" ".join(a[i1:i2]), style="bold red strike"))
            t.append(" ")
        if j2 > j1:
            t.append_text(safe_text(" ".join(b[j1:j2]), style="bold green"))
            t.append(" ")
    return t


def history_detail(snap: DeckSnapshot, r: HistoryRow | None) -> Text:
    """The change under the cursor (who, where, when, the word diff), or what the panel
    records when there is none."""
    if r is None:
        return Text("no changes recorded yet: memdeck records every change to MEMORY.md, USER.md and the "
                    "MemLock files it sees, by any writer", style="dim")
    c = r.change
    t = Text()
    t.append(f"change {c.change_id} · {c.op} · ", "bold")
    t.append_text(safe_text(_where(c), single_line=True, style="bold"))
    t.append("\nby ", "dim")
    t.append_text(safe_text(who(c), single_line=True))
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(c.since)) if c.since else "?"
    t.append(f"\nbetween {since} and {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(c.until))}", "dim")
    if c.reverted_by is not None:
        t.append(f"\nreverted by journal #{c.reverted_by}", "yellow")
    for sid in unseen_by(snap, c):
        d = snap.agent_view.diff_of(sid) if snap.agent_view is not None else None
        t.append("\nnot yet seen by session ", "bold yellow")
        t.append_text(safe_text(sid, single_line=True, style="bold yellow"))
        if d is not None:
            t.append(f" ({d.stamp.source}): its prompt was frozen before this change; ", "yellow")
            t.append_text(safe_text(new_session_hint(d.stamp.source), single_line=True, style="yellow"))
    t.append("\n\n")
    t.append_text(diff_text(c))
    t.append("\n\nr reverts it (asks first) · same as ", "dim")
    t.append(f"memdeck revert {c.change_id}", "bold")
    return t
