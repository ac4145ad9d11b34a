"""The History panel's rows and detail: every recorded change to memory and anchors, by any
writer, newest first, in words.

A memory change shows the entry and a word diff; an anchor change shows its fields one by one
(text, priority, probes, scope, reminder: what changed, from what to what), never the JSON the
history stores; memdeck's archive and restore say so ("archived (archive #3)", "restored"), not
"removed"/"added". Times are relative to the dashboard's clock ("12 min ago"): the panel draws
them again once a minute while it is shown (``Panel.RELATIVE_TIMES``).

Pure functions of a :class:`memdeck.core.overview.snapshot.DeckSnapshot` and a clock (no widgets).
"""

from __future__ import annotations

import difflib
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.text import Text

from memdeck.core.context.new_session import new_session_hint
from memdeck.core.history.changes import Change
from memdeck.core.history.diff import SHOWN_FIELDS, anchor_fields_of, probe_list
from memdeck.core.home import TARGET_FILES

from ..safe_text import safe_plain, safe_text
from .common import ago
from .context import unseen_by

if TYPE_CHECKING:
    from memdeck.core.overview.snapshot import DeckSnapshot

_OP_STYLE = {"added": "green", "removed": "red", "replaced": "yellow", "anchor_added": "green",
             "anchor_removed": "red", "anchor_changed": "yellow"}

#: Below this similarity (difflib ratio, 0-1) a changed text is shown as the old line struck over
#: the new one: a word-by-word interleaving of two different sentences cannot be read.
WORD_DIFF_MIN_RATIO = 0.5


@dataclass
class HistoryRow:
    """One change as a table row (``key`` = ``c:<change id>``)."""

    key: str
    change: Change
    cells: tuple[Any, ...]

    @property
    def text(self) -> str:
        return change_text(self.change)


def who(c: Change) -> str:
    """Who made the change, in words: memdeck's actor, Hermes with its session and platform,
    an applied pending write, or "external"."""
    a = c.attribution or {}
    if c.actor == "hermes":
        where = " ".join(str(x) for x in (a.get("source"), a.get("session_id")) if x)
        return f"hermes {where}".strip()
    if c.actor == "pending":
        origin = f" ({a.get('origin')})" if a.get("origin") else ""
        return f"pending {a.get('pending_id') or ''}{origin}".replace("  ", " ").strip()
    if c.by_memdeck:
        return f"memdeck {c.actor}"
    if c.actor in ("external", ""):
        return ("external: not memdeck (MemLock, the agent's own tools or a hand edit)" if c.kind == "anchor" else
                "external: not memdeck, no Hermes memory tool call or pending write explains it (a hand edit, "
                "the background review, cron...)")
    return c.actor


def who_short(c: Change) -> str:
    """Who, in the few characters the table has: ``memdeck cli``, ``hermes telegram``,
    ``background review`` (a pending write of Hermes' background review, applied), ``pending
    write``, ``external``. The detail pane says the rest (:func:`who`)."""
    a = c.attribution or {}
    if c.actor == "hermes":
        return f"hermes {a.get('source') or ''}".strip()
    if c.actor == "pending":
        return "background review" if a.get("origin") == "background_review" else "pending write"
    if c.by_memdeck:
        return f"memdeck {c.actor}"
    return c.actor or "external"


def _where(c: Change) -> str:
    if c.kind == "memory":
        return TARGET_FILES.get(c.target or "", "USER.md")
    return f"anchor {c.anchor_id or ''} ({c.where})".strip()


def where_short(c: Change) -> str:
    """Where, for the table: the file, or the anchor id (``global`` pin: its durable copy)."""
    if c.kind == "memory":
        return _where(c)
    return f"{'global pin' if c.scope == 'global' else 'anchor'} {c.anchor_id or ''}".strip()


def change_text(c: Change) -> str:
    """The text a person recognises the change by: the entry (memory), the anchor's text (anchors),
    the new side of an addition, else the old side. Raw data: escape it before showing."""
    if c.kind != "memory":
        for side in ((c.after, c.before) if c.op == "anchor_added" else (c.before, c.after)):
            d = anchor_fields_of(side)
            if d is not None and d.get("text"):
                return str(d["text"])
        return ""
    return (c.after if c.op == "added" else (c.before or c.after)) or ""


def op_words(c: Change) -> str:
    """The change in a few words: ``added``/``removed``/``replaced`` (memory), ``anchor added``/
    ``anchor removed``/``anchor changed``, or, for memdeck's archive and restore (journal op
    ``archive``/``restore``), ``archived (archive #N)`` / ``restored (archive #N)``; an approval
    through memdeck, ``added (approved <pending id>)``."""
    a = c.attribution or {}
    op = a.get("op") if c.by_memdeck else None
    num = a.get("archive_id")
    if op in ("archive", "restore"):
        word = "archived" if op == "archive" else "restored"
        return f"{word} (archive #{num})" if num is not None else word
    if c.by_memdeck and a.get("pending_id"):  # memdeck applied a pending write (its journal row names it)
        return f"{c.op} (approved {a['pending_id']})"
    return c.op.replace("_", " ")


def history_rows(snap: DeckSnapshot, now: float | None = None) -> list[HistoryRow]:
    """One row per change of :attr:`DeckSnapshot.history` (newest first); ``when`` is relative to
    ``now`` (epoch seconds; default the snapshot's ``taken_at``)."""
    now = snap.taken_at if now is None else now
    rows = []
    for c in snap.history:
        op = Text(op_words(c), style=_OP_STYLE.get(c.op, ""))
        if c.reverted_by is not None:
            op.append(" (reverted)", "dim")
        unseen = unseen_by(snap, c)
        if unseen:
            op.append(" · not yet seen", "bold yellow")
        cells = (
            Text(str(c.change_id), justify="right"),
            Text(ago(c.until, now)),
            safe_text(who_short(c), single_line=True, max_chars=24),
            safe_text(where_short(c), single_line=True, max_chars=32),
            op,
            safe_text(change_text(c), single_line=True, max_chars=200),
        )
        rows.append(HistoryRow(f"c:{c.change_id}", c, cells))
    return rows


def word_diff(before: str, after: str, indent: int = 0) -> Text:
    """Before -> after, word by word: removed words red and struck, added words green. Texts that
    share little (word similarity below :data:`WORD_DIFF_MIN_RATIO`) are shown whole: the old one
    struck, then ``→`` and the new one on the next line (indented by ``indent``); so is a side
    that is empty (an entry added or removed)."""
    a, b = before.split(" "), after.split(" ")
    sm = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    if not before or not after or sm.ratio() < WORD_DIFF_MIN_RATIO:
        t = Text()
        if before:
            t.append_text(safe_text(before, style="red strike"))
        if before and after:
            t.append("\n" + " " * indent + "→ ")
        if after:
            t.append_text(safe_text(after, style="green"))
        return t
    t = Text()
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            t.append_text(safe_text(" ".join(a[i1:i2]) + " "))
            continue
        if i2 > i1:
            t.append_text(safe_text(" ".join(a[i1:i2]), style="bold red strike"))
            t.append(" ")
        if j2 > j1:
            t.append_text(safe_text(" ".join(b[j1:j2]), style="bold green"))
            t.append(" ")
    t.rstrip()
    return t


def _probe_list(probes: list[str]) -> Text:
    """Probes as a readable list: ``"uv add", "uv run"`` (quoted: a probe may hold a comma)."""
    if not probes:
        return Text("none", style="dim")
    return safe_text(", ".join(f"“{p}”" for p in probes), single_line=True)


#: the width of an anchor field's label column ("priority" and two spaces)
_LABEL_WIDTH = max(len(k) for k in SHOWN_FIELDS) + 2


def _field_value(key: str, v: Any) -> Text:
    if key == "probes":
        return _probe_list(probe_list(v))
    if v is None or v == "":
        return Text("none", style="dim")
    return safe_text(str(v), single_line=key != "text")


def _field_change(key: str, old: Any, new: Any) -> Text:
    """One anchor field from ``old`` to ``new``, in words."""
    if key == "probes":
        o, n = probe_list(old), probe_list(new)
        gone, came = [p for p in o if p not in n], [p for p in n if p not in o]
        t = Text()
        if came:
            t.append("added ", "green")
            t.append_text(_probe_list(came))
        if gone:
            if came:
                t.append("; ")
            t.append("removed ", "red")
            t.append_text(_probe_list(gone))
        if not came and not gone:  # the same probes in another order
            t.append("reordered: ")
            t.append_text(_probe_list(n))
        return t
    if key in ("text", "reminder"):
        return word_diff(str(old or ""), str(new or ""), indent=_LABEL_WIDTH)
    o, n = _field_value(key, old), _field_value(key, new)
    o.stylize("red")
    n.stylize("green")
    return Text.assemble(o, " → ", n)


def anchor_change_text(c: Change) -> Text:
    """An anchor change field by field: for a change, each field that changed (from -> to) and
    the ones that did not (one dim line); for an addition or a removal, every field; the scope
    (``session`` + its session id, or ``global``: the pin in ``memlock/persist/``) last."""
    before, after = anchor_fields_of(c.before), anchor_fields_of(c.after)
    width = _LABEL_WIDTH
    t = Text()

    def line(label: str, value: Text) -> None:
        t.append(label.ljust(width), "bold")
        t.append_text(value)
        t.append("\n")

    if before is not None and after is not None:
        same = []
        for key in SHOWN_FIELDS:
            if before.get(key) == after.get(key):
                same.append(key)
            else:
                line(key, _field_change(key, before.get(key), after.get(key)))
        if same:
            t.append(f"unchanged: {', '.join(same)}\n", "dim")
    else:
        fields = after if after is not None else before
        if fields is None:  # a row the history could not read: show what it holds, escaped
            t.append_text(safe_text(c.after or c.before or ""))
            t.append("\n")
        else:
            t.append("pinned with\n" if after is not None else "it was\n", "dim")
            for key in SHOWN_FIELDS:
                line(key, _field_value(key, fields.get(key)))
    scope = Text(c.scope or "?")
    if c.scope == "global":
        scope.append(" (the durable copy in memlock/persist/, seeded into new sessions)", "dim")
    elif c.session_id:
        scope.append(" · ", "dim")
        scope.append_text(safe_text(c.session_id, single_line=True))
    line("scope", scope)
    t.rstrip()
    return t


def diff_text(c: Change) -> Text:
    """What changed, in words: a memory entry's word diff (or the entry added/removed), an
    anchor's fields (:func:`anchor_change_text`)."""
    if c.kind != "memory":
        return anchor_change_text(c)
    return word_diff(c.before or "", c.after or "")


def toast_text(c: Change) -> str:
    """The one-line toast for a change by a writer other than memdeck: what happened, where, by
    whom, the text a person recognises (never the stored JSON), and the command that puts it back.
    Escaped for the screen."""
    who_ = {"hermes": f"Hermes ({c.attribution.get('source') or 'session'} {c.attribution.get('session_id')})",
            "pending": f"a pending write ({c.attribution.get('pending_id')})"}.get(c.actor, "a writer other than memdeck")
    text = change_text(c)
    what = text[:80] + ("…" if len(text) > 80 else "")
    return safe_plain(f"{op_words(c)} in {_where(c)} by {who_}: {what} (memdeck revert {c.change_id})",
                      single_line=True)


def _stamp(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


def history_detail(snap: DeckSnapshot, r: HistoryRow | None, now: float | None = None) -> Text:
    """The change under the cursor (what, who, when, the change in words), or what the panel
    records when there is none. ``now``: epoch seconds for the relative time (default the
    snapshot's ``taken_at``)."""
    if r is None:
        return Text("no changes recorded yet: memdeck records every change to MEMORY.md, USER.md and the "
                    "MemLock files it sees, by any writer", style="dim")
    now = snap.taken_at if now is None else now
    c = r.change
    t = Text()
    t.append(f"change {c.change_id} · {op_words(c)} · ", "bold")
    t.append_text(safe_text(_where(c), single_line=True, style="bold"))
    t.append("\nby ", "dim")
    t.append_text(safe_text(who(c), single_line=True))
    if c.by_memdeck:
        t.append(f" (journal #{c.attribution.get('journal_id')})", "dim")
    t.append(f"\nseen {ago(c.until, now)}", "dim")
    if c.since:
        t.append(f" · it happened between {_stamp(c.since)} and {_stamp(c.until)}", "dim")
    else:
        t.append(f" · at or before {_stamp(c.until)}", "dim")
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
