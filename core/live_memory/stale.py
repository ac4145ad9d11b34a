"""The open sessions whose frozen memory differs from the files, as ``memdeck sessions --stale``
and ``/memdeck stale`` (issue 35) list them: one row per open session with its number of
differences (no entry texts) and ``live_memory`` ``{mode, delivered, waiting, withheld}`` (issue 33).

Not imported by the package (``core/live_memory/__init__.py``): it reads state.db's prompts through
the context package, which the plugin's per-turn hooks never load.
"""

from __future__ import annotations

from typing import Any

from ..config import Config
from ..context.prompts import PromptCache
from ..context.report import disk_entries, open_session_diffs, verdict_for
from ..home import HermesHome
from ..sessions.profile import home_version
from .view import delivery_view


def stale_rows(home: HermesHome, config: Config, db: Any) -> list[dict[str, Any]]:
    """Every open session of ``db`` (a ``StateDB`` of ``home``, newest start first, at most 500):
    ``SessionDiff.to_dict(changes=False)`` plus ``live_memory``. Raises what the state.db reader raises."""
    verdict = verdict_for(home_version(home))
    diffs = open_session_diffs(db, config, PromptCache(), disk_entries(home), verdict)
    rows = []
    for d in diffs:
        row = d.to_dict(changes=False)
        live = delivery_view(home, config, d.session_id, d.frozen.changes, verdict)
        row["live_memory"] = {"mode": live["mode"], **live["counts"]}
        rows.append(row)
    return rows


__all__ = ["stale_rows"]
