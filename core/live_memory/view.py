"""One session's live-memory view for ``memdeck context --json`` (``memory.delivery``) and
``memdeck sessions --stale --json``: each difference with its delivery state, the mode and counts.

Outside Hermes' process the blocked placeholder is memdeck's reproduction of Hermes 0.19's
(:func:`memdeck.core.memory.prompt_block.sanitize_entries_for_snapshot`); the plugin uses the
running Hermes' own wording (``core/plugin/hermes_rules.py``), so an ``entry`` here can differ
from what a 0.22 session was sent in its advice's words only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..config import Config
from ..context.frozen import MemoryChange
from ..context.new_session import not_seen_until
from ..home import HermesHome
from ..memory.prompt_block import sanitize_entries_for_snapshot
from .changes import live_changes
from .delivery import delivery_counts, delivery_rows
from .record import load_deliveries
from .settings import live_settings

PLUGIN_NAME = "memdeck"


def delivery_view(home: HermesHome | Path, config: Config, session_id: str, changes: Sequence[MemoryChange],
                  verdict: Callable[[str], Sequence[str]]) -> dict[str, Any]:
    """``{"mode", "max_chars", "plugin_enabled", "delivery": [rows], "counts": {delivered, waiting,
    withheld}}`` of one session (rows: :func:`.delivery.delivery_rows`). ``verdict``: text -> the
    pattern ids the home's Hermes blocks it with. Reads memdeck.db read-only; never raises."""
    s = live_settings(config.raw)
    lcs = live_changes(changes, lambda t, fn: sanitize_entries_for_snapshot([t], fn)[0], lambda t: bool(verdict(t)))
    enabled = PLUGIN_NAME in config.plugins_enabled
    rows = delivery_rows(lcs, load_deliveries(home, session_id) if lcs else {}, s, plugin_enabled=enabled)
    return {"mode": s.mode, "max_chars": s.max_chars, "plugin_enabled": enabled, "delivery": rows,
            "counts": delivery_counts(rows)}


def live_on(mode: str | None, plugin_enabled: bool) -> bool:
    """Whether a memory write reaches a running session on its next turn: live memory is
    ``notice`` or ``delta`` and the memdeck plugin is in ``plugins.enabled`` (it is what delivers)."""
    return mode in ("notice", "delta") and plugin_enabled


def write_note_for(source: str | None, session_id: str, mode: str | None, plugin_enabled: bool) -> str:
    """The sentence after a memory write for the running session ``session_id`` (``source``:
    ``sessions.source``) whose frozen block carries memory: with live memory on (:func:`live_on`),
    ``the running session X (cli) gets this on its next turn (live memory: delta)``; else
    :func:`memdeck.core.context.new_session.not_seen_until` (``... will not see this until a new
    session: type /new ...``)."""
    if not live_on(mode, plugin_enabled):
        return not_seen_until(source, session_id)
    where = f" ({source})" if source else ""
    return f"the running session {session_id}{where} gets this on its next turn (live memory: {mode})"


def config_write_note(config: Config, source: str | None, session_id: str) -> str:
    """:func:`write_note_for` under ``config`` (its ``memdeck.live_memory`` and ``plugins.enabled``)."""
    return write_note_for(source, session_id, live_settings(config.raw).mode, PLUGIN_NAME in config.plugins_enabled)


__all__ = ["PLUGIN_NAME", "config_write_note", "delivery_view", "live_on", "write_note_for"]
