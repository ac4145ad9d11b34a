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


__all__ = ["PLUGIN_NAME", "delivery_view"]
