"""The fleet screen's rows: pure functions from :class:`memdeck.core.fleet.rows.FleetRow` to the
cells the table shows (the words are :mod:`memdeck.core.fleet.columns`'s, shared with the text
table of ``memdeck fleet``; this adds the colours and the one escape path to the screen)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text

from memdeck.core.fleet.attention import FILLING_PCT, NEAR_LIMIT_PCT
from memdeck.core.fleet.columns import COLUMNS, row_cells, row_detail
from memdeck.core.fleet.rows import FleetRow

from ..safe_text import safe_text

#: attention level -> the style of the row's mark and state
LEVEL_STYLES = {0: "green", 1: "cyan", 2: "yellow", 3: "bold red"}


def _pct_style(cell: str) -> str:
    try:
        pct = int(cell.split()[0])
    except (ValueError, IndexError):
        return "dim"
    return "bold red" if pct >= NEAR_LIMIT_PCT else "yellow" if pct >= FILLING_PCT else ""


def fleet_table_rows(rows: Sequence[FleetRow], now: float) -> list[tuple[str, list[Text]]]:
    """``(address, cells)`` per row, in the rows' order, one cell per :data:`COLUMNS` column."""
    out: list[tuple[str, list[Text]]] = []
    for row in rows:
        words = row_cells(row, now)
        level = row.attention.level
        styles = {
            "attention": LEVEL_STYLES.get(level, "bold red"),
            "state": "dim" if row.stale else LEVEL_STYLES.get(level, "bold red"),
            "home": "bold" if not row.stale else "dim",
            "memory": _pct_style(words["memory"]),
            "user": _pct_style(words["user"]),
            "pending": "yellow" if row.figures is not None and row.figures.pending else "",
            "integrity": "bold red" if any("integrity" in r.text for r in row.attention.reasons) else "",
            "stale_sessions": "dim" if row.figures is not None and not row.figures.stale_sessions.known else "",
        }
        cells = [safe_text(words[key], single_line=True, max_chars=60, style=styles.get(key, "")) for key, _ in COLUMNS]
        out.append((row.home.address, cells))
    return out


def fleet_detail(row: FleetRow, now: float) -> Text:
    """The line under the table for the selected row (:func:`memdeck.core.fleet.columns.row_detail`)."""
    return safe_text(row_detail(row, now), single_line=True, max_chars=400,
                     style=LEVEL_STYLES.get(row.attention.level, "bold red") if row.attention.level >= 2 else "")


def fleet_summary(rows: Sequence[FleetRow]) -> str:
    """``"20 homes · 3 need attention now · 1 stale"``."""
    n = len(rows)
    now_ = sum(1 for r in rows if r.attention.level >= 3)
    soon = sum(1 for r in rows if r.attention.level == 2)
    stale = sum(1 for r in rows if r.stale)
    parts = [f"{n} home{'s' if n != 1 else ''}"]
    if now_:
        parts.append(f"{now_} need{'s' if now_ == 1 else ''} attention now")
    if soon:
        parts.append(f"{soon} to look at soon")
    if stale:
        parts.append(f"{stale} stale")
    return " · ".join(parts)
