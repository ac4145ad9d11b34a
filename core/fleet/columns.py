"""The fleet's columns as words: one definition for the text table of ``memdeck fleet`` (no
terminal UI) and the fleet screen (which adds colour, ``memdeck.tui.views.fleet``).

Every cell is a plain ``str``; a figure memdeck does not know is ``?`` (an older remote memdeck,
an unreadable store), never a guessed value. The stale live sessions column shows
:data:`~.stale_sessions.NOT_AVAILABLE` (or the note) where it cannot be known.
"""

from __future__ import annotations

from .rows import FleetRow
from .stale_sessions import NOT_AVAILABLE

#: (column key, header) in display order.
COLUMNS: tuple[tuple[str, str], ...] = (
    ("attention", "!"),
    ("home", "home"),
    ("state", "state"),
    ("memory", "MEMORY"),
    ("user", "USER"),
    ("pending", "pending (oldest)"),
    ("integrity", "integrity (drifted)"),
    ("stale_sessions", "stale live sessions"),
    ("last_change", "last change"),
    ("provider", "provider"),
    ("memlock", "MemLock state"),
)

ATTENTION_MARKS = {0: "", 1: "·", 2: "!", 3: "!!"}
#: The state column's word for a row read now, by attention level.
LEVEL_WORDS = {0: "ok", 1: "notice", 2: "look soon", 3: "act now"}


def span(seconds: float) -> str:
    """A duration in a few characters: ``45 s``, ``12 min``, ``5.5 h``, ``3 d``."""
    d = max(0.0, float(seconds))
    if d < 60:
        return f"{int(d)} s"
    if d < 3600:
        return f"{int(d // 60)} min"
    if d < 86400 * 2:
        return f"{d / 3600:.1f} h"
    return f"{int(d // 86400)} d"


def row_cells(row: FleetRow, now: float) -> dict[str, str]:
    """The cells of one row, by column key (:data:`COLUMNS`), at ``now`` (epoch seconds)."""
    f = row.figures
    home = row.label + (" (ssh)" if row.home.remote else "")
    out = {"attention": ATTENTION_MARKS.get(row.attention.level, "!!"), "home": home}
    if f is None:
        out.update({k: "" for k, _ in COLUMNS if k not in out})
        out["state"] = "error"
        return out
    for target in ("memory", "user"):
        st = f.memory.get(target)
        out[target] = "?" if st is None or st.error else f"{st.pct} %"
    age = f.oldest_pending_age(now)
    out["pending"] = f"{f.pending}" + (f" ({span(age)})" if age is not None and f.pending else "")
    score = "—" if f.integrity_score is None else str(f.integrity_score)
    out["integrity"] = score + (f" ({f.drifted_anchors})" if f.drifted_anchors else "")
    out["stale_sessions"] = str(f.stale_sessions.count) if f.stale_sessions.known else (f.stale_sessions.note or NOT_AVAILABLE)
    if f.changes_total is None:
        out["last_change"] = "?"
    elif f.last_change is None:
        out["last_change"] = "none recorded"
    else:
        out["last_change"] = f"{span(now - f.last_change.time)} ago by {f.last_change.actor}"
    out["provider"] = "?" if f.provider is None else (f.provider or "built-in")
    if f.session_store:
        out["provider"] += " · sessions elsewhere"
    out["memlock"] = "" if not f.memlock_elsewhere else (f.memlock_path or "?")
    if row.stale:
        out["state"] = f"stale {span(now - (row.fetched_at or now))}"
    else:
        out["state"] = LEVEL_WORDS.get(row.attention.level, "act now")
    return out


def row_detail(row: FleetRow, now: float) -> str:
    """Why the row is where it is, in one line: its address, the error (a stale row: since when
    its data is), then every reason of :attr:`FleetRow.attention`, most urgent first."""
    parts = [row.home.address]
    if row.stale and row.fetched_at is not None:
        parts.append(f"data from {span(now - row.fetched_at)} ago: {row.error or 'the host did not answer'}")
    elif row.error:
        parts.append(f"error: {row.error}")
    reasons = [r.text for r in row.attention.reasons if not (row.error and r.text.endswith(row.error))]
    if reasons:
        parts.append("; ".join(reasons))
    elif not (row.stale or row.error):
        parts.append("nothing needs attention")
    return " · ".join(parts)
