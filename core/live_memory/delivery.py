"""Each difference's delivery state, as ``memdeck context --json`` ``memory.delivery`` says it.

``delivered`` (a turn's block carried it: ``turn``, ``turn_id``, ``at``), ``withheld`` (it will not
reach this session before /new: ``reason``) or ``waiting`` (the next user turn carries it). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .changes import LiveChange
from .record import Delivery
from .settings import LiveSettings

OFF_REASON = "live memory is off (memdeck.live_memory: off in config.yaml)"
NO_PLUGIN_REASON = "the memdeck plugin is not in plugins.enabled: nothing reaches running sessions"


def delivery_rows(changes: Sequence[LiveChange], delivered: Mapping[str, Delivery], settings: LiveSettings, *,
                  plugin_enabled: bool = True) -> list[dict[str, Any]]:
    """One ``{target, change, entry, blocked, state, reason, turn, turn_id, at}`` per change, in diff
    order. ``entry`` is what the agent gets (a blocked entry's ``[BLOCKED: ...]`` placeholder, never
    its text). A recorded row wins over the settings (what was sent stays sent)."""
    out: list[dict[str, Any]] = []
    for c in changes:
        row: dict[str, Any] = {"target": c.target, "change": c.change, "entry": c.entry, "blocked": c.blocked,
                               "state": "waiting", "reason": None, "turn": None, "turn_id": None, "at": None}
        d = delivered.get(c.key)
        if d is not None:
            row.update(state=d.state, reason=d.reason, turn=d.turn, turn_id=d.turn_id, at=d.at)
        elif settings.mode == "off":
            row.update(state="withheld", reason=OFF_REASON)
        elif not plugin_enabled:
            row.update(state="withheld", reason=NO_PLUGIN_REASON)
        else:
            row["reason"] = "the next user turn carries it"
        out.append(row)
    return out


def delivery_counts(rows: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """``{"delivered": n, "waiting": n, "withheld": n}`` of :func:`delivery_rows`."""
    out = {"delivered": 0, "waiting": 0, "withheld": 0}
    for r in rows:
        out[str(r["state"])] = out.get(str(r["state"]), 0) + 1
    return out


__all__ = ["NO_PLUGIN_REASON", "OFF_REASON", "delivery_counts", "delivery_rows"]
