"""Live sessions out of date with their memory: the one figure of the fleet view that needs the
agent's-view feature (issue 24: ``memdeck sessions --stale --json``, ``core/context/``).

Hermes freezes MEMORY.md and USER.md into a session's system prompt when the session starts
(DESIGN.md "The files are not the prompt"); a session whose frozen memory differs from the files
is *stale*. Where memdeck cannot tell (state.db unreadable, an older remote memdeck), it says
so: a note on screen, ``null`` with the note in ``--json``, and no sample in the metrics (never a
guessed 0).

Every home, local or remote, reads the ``stale_sessions`` key of its ``status --json`` (a local
home's is the snapshot's ``stale_sessions`` part: the agent view's stale sessions, else
``core/context/report.py`` :func:`stale_session_count`, what ``sessions --stale`` lists). The
fleet screen column, the ``--json`` field and the ``memdeck_stale_live_sessions`` metric all go
through :func:`stale_sessions_from_status`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: What the screen shows while the figure cannot be known.
NOT_AVAILABLE = "n/a (unknown)"


@dataclass(frozen=True)
class StaleSessions:
    """``count``: open sessions whose frozen memory differs from the files (None: not known);
    ``note``: why it is not known (shown instead of the count)."""

    count: int | None = None
    note: str = NOT_AVAILABLE

    @property
    def known(self) -> bool:
        return self.count is not None

    def to_dict(self) -> dict[str, Any]:
        return {"count": self.count, "note": None if self.known else self.note}

    @classmethod
    def from_dict(cls, d: Any) -> StaleSessions:
        if isinstance(d, Mapping) and isinstance(d.get("count"), int) and not isinstance(d.get("count"), bool):
            return cls(count=int(d["count"]), note="")
        note = d.get("note") if isinstance(d, Mapping) and isinstance(d.get("note"), str) else NOT_AVAILABLE
        return cls(count=None, note=note or NOT_AVAILABLE)


def stale_sessions_from_status(status: Mapping[str, Any]) -> StaleSessions:
    """The same figure from a ``status --json`` dict (a remote home: its ``stale_sessions`` key;
    an older remote memdeck has none: :data:`NOT_AVAILABLE`). Never raises."""
    part = status.get("stale_sessions") if isinstance(status, Mapping) else None
    if part is None:
        return StaleSessions(note="n/a (the remote memdeck does not report it)")
    return StaleSessions.from_dict(part)
