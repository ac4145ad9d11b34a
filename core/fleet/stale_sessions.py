"""Live sessions out of date with their memory: the one figure of the fleet view that needs the
agent's-view feature (issue 24: ``memdeck sessions --stale --json``, ``core/context/``).

Hermes freezes MEMORY.md and USER.md into a session's system prompt when the session starts
(DESIGN.md "The files are not the prompt"); a session whose frozen memory differs from the files
is *stale*. Until that feature is merged, memdeck cannot tell, and says so: the figure is
:data:`NOT_AVAILABLE` on screen, ``null`` with the note in ``--json``, and no sample in the
metrics (never a guessed 0).

**Wiring it (the lead):** once ``core/context`` is on main, make :func:`count_stale_sessions`
return ``StaleSessions(count=n)`` where ``n`` is the number of open sessions that
``core.context.report.open_session_diffs(db, config, PromptCache(), disk_entries(home),
verdict_for(version))`` reports with ``in_prompt`` and ``differences > 0`` (what
``sessions --stale`` lists), and :func:`stale_sessions_from_status` read the same figure from
the key ``status --json`` will carry for it. Nothing else changes: the fleet screen column, the
``--json`` field and the ``memdeck_stale_live_sessions`` metric all go through these two functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: What the screen shows while the figure cannot be known.
NOT_AVAILABLE = "n/a (needs the agent's-view feature)"


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
    def from_dict(cls, d: Any) -> "StaleSessions":
        if isinstance(d, Mapping) and isinstance(d.get("count"), int) and not isinstance(d.get("count"), bool):
            return cls(count=int(d["count"]), note="")
        note = d.get("note") if isinstance(d, Mapping) and isinstance(d.get("note"), str) else NOT_AVAILABLE
        return cls(count=None, note=note or NOT_AVAILABLE)


def count_stale_sessions(home: Any, config: Any, db: Any) -> StaleSessions:
    """The stale live sessions of a local home (``home``: a HermesHome, ``config``: its Config,
    ``db``: its open read-only StateDB or None). Never raises.

    Returns :data:`NOT_AVAILABLE` until the agent's-view feature is wired (module docstring).
    """
    return StaleSessions()


def stale_sessions_from_status(status: Mapping[str, Any]) -> StaleSessions:
    """The same figure from a ``status --json`` dict (a remote home). Never raises.

    Returns :data:`NOT_AVAILABLE` until the agent's-view feature is wired (module docstring).
    """
    return StaleSessions()
