"""The overview layout (``o``, ``memdeck --layout overview``): one screen that fits beside an
agent at 80x24, each line a key away from its panel.

Pure functions of a :class:`memdeck.core.overview.snapshot.DeckSnapshot` (no I/O, no Textual).
Every data string goes through :func:`memdeck.tui.safe_text.safe_text`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from rich.text import Text

from memdeck.core.home import TARGETS
from memdeck.core.overview.alerts import oldest_pending_age
from memdeck.core.text import age_words, percent

from ..safe_text import safe_text
from .capacity import usage_bar
from .common import ago, badge_counts, short_clock
from .context import differing_count, followed_diff
from .history import change_text, op_words, where_short, who_short
from .integrity import current_score

if TYPE_CHECKING:
    from memdeck.core.overview.snapshot import DeckSnapshot

#: Audit points the trend line draws (the newest last).
TREND_POINTS = 12
#: Changes listed (newest first).
LAST_CHANGES = 3
#: Width of the section names (the key and the panel's title), in columns.
_LABEL_W = 13
_SPARK = "▁▂▃▄▅▆▇█"


#: The key shown before each block when the caller names none (the dashboard's defaults, 1-8).
DEFAULT_KEYS = {"integrity": "1", "capacity": "4", "review": "6", "history": "7", "context": "8"}


def _label(pid: str, title: str, keys: Mapping[str, str]) -> Text:
    t = Text()
    key = keys.get(pid, "")
    t.append(f" {key} " if len(key) <= 1 else f"{key} "[:3], "bold reverse")
    t.append(f" {title}".ljust(_LABEL_W - 3), "bold")
    return t


def sparkline(scores: list[int]) -> str:
    """One block character per score 0-100 (``▁`` .. ``█``)."""
    return "".join(_SPARK[min(len(_SPARK) - 1, max(0, int(s)) * len(_SPARK) // 101)] for s in scores)


def integrity_line(snap: DeckSnapshot, now: float, keys: Mapping[str, str] = DEFAULT_KEYS) -> Text:
    """``92 /100 ▲ +3 since the last audit · floor 70 · ▃▅▆█ (12 audits)`` for the shown session."""
    t = _label("integrity", "Integrity", keys)
    if snap.partial:
        return t.append("reading state.db…", "bold cyan")
    score = current_score(snap)
    if score is None:
        return t.append("no score: no audited session", "dim")
    floor = int(snap.config.memlock.alert_floor)
    t.append(f"{score:>3}", "bold red" if score < floor else "bold green")
    t.append("/100 ")
    points = [int(s) for _t, s in snap.integrity_history]
    if len(points) >= 2:
        delta = points[-1] - points[-2]
        arrow, style = ("▲", "green") if delta > 0 else (("▼", "red") if delta < 0 else ("=", "dim"))
        t.append(f"{arrow} {delta:+d} ", style)
    t.append(f"floor {floor}", "dim")
    if score < floor:
        t.append(" UNDER", "bold red")
    if points:
        t.append("  ")
        t.append(sparkline(points[-TREND_POINTS:]), "cyan")
        t.append(f" {min(len(points), TREND_POINTS)} audits", "dim")
    return t


def capacity_lines(snap: DeckSnapshot, width: int, keys: Mapping[str, str] = DEFAULT_KEYS) -> Text:
    """Both stores' usage, one line each (the Capacity panel's bars)."""
    lines = []
    for i, target in enumerate(TARGETS):
        t = _label("capacity", "Capacity", keys) if i == 0 else Text(" " * _LABEL_W)
        bar = usage_bar(snap, target, max(20, width - _LABEL_W))
        t.append_text(bar.split("\n")[0] if "\n" in bar.plain else bar)
        lines.append(t)
    return Text("\n").join(lines)


def review_line(snap: DeckSnapshot, now: float, keys: Mapping[str, str] = DEFAULT_KEYS) -> Text:
    """``3 pending (oldest 5 h) · 1 flagged``."""
    t = _label("review", "Review", keys)
    pending = len(snap.pending)
    flagged = badge_counts(snap).get("review", 0) - pending
    oldest = oldest_pending_age(snap, now)
    t.append(f"{pending} pending", "bold yellow" if pending else "green")
    if oldest is not None:
        t.append(f" (oldest unreviewed {age_words(oldest[0])})", "yellow")
    t.append(" · ")
    t.append(f"{flagged} flagged", "bold red" if flagged else "green")
    return t


def context_lines(snap: DeckSnapshot, keys: Mapping[str, str] = DEFAULT_KEYS) -> Text:
    """The frozen-memory difference count, then the next compaction (the followed session's)."""
    t = _label("context", "Context", keys)
    d = followed_diff(snap)
    n = differing_count(snap)
    if d is None:
        t.append("no open session", "dim")
    elif not d.frozen.in_prompt:
        t.append("frozen memory: not in this session's prompt", "dim")
    else:
        t.append(f"frozen memory: {n} {'entry differs' if n == 1 else 'entries differ'}",
                 "bold yellow" if n else "green")
        t.append(f" (frozen {ago(d.stamp.frozen_at, snap.taken_at)})", "dim")
    t.append("\n" + " " * _LABEL_W)
    view = getattr(snap, "agent_view", None)
    report = getattr(view, "report", None) if view is not None else None
    if report is None:
        t.append("next compaction: unknown (no session report)", "dim")
        return t
    nc, why = report.next_compaction()
    if nc is None:
        t.append_text(safe_text(f"next compaction: unknown: {why}", single_line=True, max_chars=120, style="dim"))
        return t
    pct = percent(nc["estimated_tokens"], nc["threshold_tokens"]) if nc.get("threshold_tokens") else None
    t.append("next compaction: ")
    t.append(f"{pct}%" if pct is not None else "?", "bold red" if (pct or 0) >= 85 else "bold")
    t.append(f" of {nc['threshold_tokens']:,} tokens, ~{nc['tokens_left']:,} left", "")
    return t


def history_lines(snap: DeckSnapshot, now: float, width: int, keys: Mapping[str, str] = DEFAULT_KEYS) -> Text:
    """The last :data:`LAST_CHANGES` changes, newest first: when, what, where, who, the text."""
    t = _label("history", "History", keys)
    changes = list(snap.history[:LAST_CHANGES])
    if not changes:
        return t.append("no change recorded yet", "dim")
    t.append(f"last {len(changes)} changes", "dim")
    for c in changes:
        line = Text(" " * (_LABEL_W - 2) + "· ")
        line.append(short_clock(c.until, now), "dim")
        line.append(f" {op_words(c)}", "bold")
        line.append(f" {where_short(c)}")
        line.append(f" {who_short(c)}", "cyan")
        room = max(8, width - line.cell_len - 2)
        line.append("  ")
        line.append_text(safe_text(change_text(c), single_line=True, max_chars=room, style="dim"))
        line.truncate(width, overflow="ellipsis")
        t.append("\n")
        t.append_text(line)
    return t


def overview_text(snap: DeckSnapshot, now: float, width: int, keys: Mapping[str, str] = DEFAULT_KEYS) -> Text:
    """The overview, drawn to ``width`` columns: integrity with its trend, both stores' usage,
    pending and flagged counts with the oldest age, the frozen-memory difference count and the
    next compaction, then the last three changes. Each block starts with the key of its panel
    (``keys``: panel id -> the key shown, the dashboard's bindings as a user keymap left them).
    At most 12 lines (fits 80x24 with the status line, the footer and room to spare)."""
    parts = [integrity_line(snap, now, keys), capacity_lines(snap, width, keys), review_line(snap, now, keys),
             context_lines(snap, keys), history_lines(snap, now, width, keys)]
    for p in parts:
        p.no_wrap = True
        p.overflow = "ellipsis"
    body = Text("\n").join(parts)
    body.no_wrap = True
    body.overflow = "ellipsis"
    return body


def overview_hint() -> Text:
    """The line under the overview: how to reach the panels and leave."""
    return Text(" 1-8 a panel · o panels · ? every key · ctrl+p palette", style="dim")
