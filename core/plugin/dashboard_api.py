"""The "Memory" tab of Hermes' own web dashboard (issue 35 #3): what its API answers, on the core.

``memdeck plugin install`` writes a Hermes dashboard plugin into ``$HERMES_HOME/plugins/memdeck/
dashboard/`` (``core/plugin/dashboard/``: ``manifest.json``, ``memdeck.js``, ``plugin_api.py``). Hermes
0.19's web server discovers it (``hermes_cli/web_server.py`` ``_discover_dashboard_plugins``),
imports ``plugin_api.py`` and mounts its FastAPI ``router`` under ``/api/plugins/memdeck/``
(``_mount_plugin_api_routes``), behind the dashboard's own authentication (``auth_middleware``: the
``X-Hermes-Session-Token`` header the SPA's ``authedFetch`` sends on a loopback bind; the login
cookie session of ``gated_auth_middleware`` on any other bind). ``plugin_api.py`` is a thin
router: every answer and every write is a function of this module, which calls the functions the
CLI calls:

* :func:`tab_state`: capacity of both stores (``read_memory``), the review queue (``memdeck
  pending``'s :func:`..memory.review.review_queue`), the open sessions whose frozen memory differs
  (``memdeck sessions --stale``: :func:`stale_session_rows`), the last recorded changes
  (``memdeck history``: ``observe`` then ``list_changes``).
* :func:`approve`, :func:`reject`, :func:`edit`: ``memdeck pending approve|reject|edit`` (one locked,
  journaled write each; a stale record is refused with Hermes' reason); :func:`revert`: ``memdeck
  revert CHANGE_ID``. Refusals are raised as :class:`..errors.Refused` (``plugin_api.py`` answers
  409, 404 for ``not_found``, with the reason), and each journal row's ``detail["origin"]`` says
  ``{"platform": "hermes-dashboard", ...}`` with the signed-in user when the dashboard has one.

Read-only: Hermes 0.19's dashboard has no read-only mode (neither has 0.22.2's: no flag, no
setting, no scope on a browser session). The tab is read-only when the home's ``config.yaml``
says ``memdeck: {dashboard_read_only: true}`` (:func:`read_only_reason`): its buttons are not
shown and every write is refused with 403 before the core is called.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from ..config import Config, load_config
from ..errors import Refused
from ..history.changes import list_changes
from ..history.diff import anchor_field_lines
from ..history.observation import observe
from ..history.reverting import revert as _revert
from ..home import TARGETS, HermesHome
from ..memory import pending as _pending
from ..memory.reader import read_memory
from ..memory.review import edit_and_approve, review_queue

#: ``detail["origin"]["platform"]`` of every write made from the tab.
PLATFORM = "hermes-dashboard"
#: The journal's actor of those writes.
ACTOR = "dashboard"
#: How many recorded changes the tab lists.
CHANGES_SHOWN = 20
_TRUE = ("true", "yes", "on", "1")


def read_only_reason(config: Config) -> str | None:
    """Why the tab may not write (``memdeck.dashboard_read_only`` in config.yaml), or None."""
    sec = config.raw.get("memdeck")
    flag = sec.get("dashboard_read_only") if isinstance(sec, Mapping) else None
    if flag is True or (isinstance(flag, str) and flag.strip().lower() in _TRUE):
        return "the Memory tab is read-only (memdeck: dashboard_read_only in config.yaml)"
    return None


def refuse_if_read_only(config: Config) -> None:
    """Raise :class:`Refused` (code ``read_only``) when the tab is read-only."""
    why = read_only_reason(config)
    if why:
        raise Refused(why, code="read_only")


def origin(user: Any = None) -> dict[str, Any]:
    """The journal's ``detail["origin"]`` of a write from the tab: the platform, and the signed-in
    dashboard user (Hermes' ``Session``: ``user_id``, ``email``) when the dashboard has one."""
    out: dict[str, Any] = {"platform": PLATFORM}
    for key in ("user_id", "email", "provider"):
        val = getattr(user, key, None)
        if val:
            out[key] = str(val)
    return out


def _provider(home: HermesHome, config: Config) -> str | None:
    from ..provider_settings import configured_provider
    from ..sessions.profile import home_version

    return configured_provider(config, home_version(home))


def capacity(home: HermesHome, config: Config) -> list[dict[str, Any]]:
    """MEMORY.md and USER.md: ``{target, file, chars, limit, pct, entries, error, drift}``."""
    out = []
    for t in TARGETS:
        st = read_memory(home, config, t)
        out.append({"target": t, "file": st.path.name, "chars": st.chars, "limit": st.limit, "pct": st.pct,
                    "entries": len(st.entries), "error": st.error, "drift": st.drift})
    return out


def stale_session_rows(home: HermesHome, config: Config, db: Any) -> list[dict[str, Any]]:
    """``memdeck sessions --stale``'s rows: every open session of ``db`` (a
    :class:`..sessions.statedb.StateDB`) with its number of differences between its frozen memory
    and the files (no entry texts) and ``live_memory`` ``{mode, delivered, waiting, withheld}``."""
    from ..context.prompts import PromptCache
    from ..context.report import disk_entries, open_session_diffs, verdict_for
    from ..live_memory.view import delivery_view
    from ..sessions.profile import home_version

    verdict = verdict_for(home_version(home))
    rows = []
    for d in open_session_diffs(db, config, PromptCache(), disk_entries(home), verdict):
        row = d.to_dict(changes=False)
        live = delivery_view(home, config, d.session_id, d.frozen.changes, verdict)
        row["live_memory"] = {"mode": live["mode"], **live["counts"]}
        rows.append(row)
    return rows


def stale_sessions(home: HermesHome, config: Config) -> dict[str, Any]:
    """``{"state_db": {state, message, ...}, "sessions": [rows of the sessions that differ]}``."""
    from ..sessions.statedb import StateDB

    with StateDB(home.state_db) as db:
        st = db.status()
        rows = stale_session_rows(home, config, db) if st.ok else []
    return {"state_db": st.as_dict(), "sessions": [r for r in rows if r["in_prompt"] and r["differences"]]}


def recent_changes(home: HermesHome, limit: int = CHANGES_SHOWN) -> list[dict[str, Any]]:
    """The last ``limit`` recorded changes, newest first (``memdeck history --json`` rows, and an
    anchor change's fields in words as ``memdeck history`` prints them: ``lines``), after recording
    what changed on disk since the last look (``observe``: memdeck.db only)."""
    try:
        observe(home)
    except Exception:  # noqa: BLE001 - the tab still lists what is recorded; the next look observes again
        pass
    out = []
    for c in list_changes(home, limit=limit):
        row = c.to_dict()
        if c.kind == "anchor":
            row["lines"] = anchor_field_lines(c.before, c.after)
        out.append(row)
    return out


def tab_state(home: HermesHome, now: float | None = None) -> dict[str, Any]:
    """Everything the tab shows (docs/STATUS_JSON.md, "The dashboard tab")."""
    config = load_config(home)
    now = time.time() if now is None else now
    why = read_only_reason(config)
    return {
        "home": str(home.path),
        "read_only": why is not None,
        "read_only_reason": why,
        "capacity": capacity(home, config),
        "pending": [i.to_dict(now) for i in review_queue(home, config, _provider(home, config))],
        "stale_sessions": stale_sessions(home, config),
        "changes": recent_changes(home),
    }


def _result(res: Any, what: str) -> dict[str, Any]:
    msg = getattr(res, "message", None) or (res.get("message") if isinstance(res, dict) else None) or what
    jid = getattr(res, "journal_id", None) if not isinstance(res, dict) else res.get("journal_id")
    return {"ok": True, "message": str(msg), "journal_id": jid}


def approve(home: HermesHome, pending_id: str, user: Any = None) -> dict[str, Any]:
    """``memdeck pending approve ID`` (raises :class:`Refused` with the reason)."""
    config = load_config(home)
    refuse_if_read_only(config)
    res = _pending.approve(home, config, pending_id, actor=ACTOR, origin=origin(user))
    return _result(res, f"approved pending write {pending_id}")


def reject(home: HermesHome, pending_id: str, user: Any = None) -> dict[str, Any]:
    """``memdeck pending reject ID``."""
    config = load_config(home)
    refuse_if_read_only(config)
    res = _pending.reject(home, pending_id, actor=ACTOR, origin=origin(user))
    return _result(res, f"rejected pending write {pending_id}")


def edit(home: HermesHome, pending_id: str, text: str, op: int | None = None, user: Any = None) -> dict[str, Any]:
    """``memdeck pending edit ID TEXT [--op N]``: approve with ``text`` in place of the staged one."""
    config = load_config(home)
    refuse_if_read_only(config)
    if not text.strip():
        raise Refused("the edited text is empty", code="invalid")
    if op is not None and op < 1:
        raise Refused("op counts from 1", code="invalid")
    res = edit_and_approve(home, config, pending_id, text, op=op, actor=ACTOR, origin=origin(user))
    return _result(res, f"approved pending write {pending_id} with the edited text")


def revert(home: HermesHome, change_id: int, user: Any = None) -> dict[str, Any]:
    """``memdeck revert CHANGE_ID``. The journal row's ``actor`` is ``dashboard`` (the history's
    revert takes no origin)."""
    config = load_config(home)
    refuse_if_read_only(config)
    del user
    return _result(_revert(home, config, change_id, actor=ACTOR), f"reverted change #{change_id}")


__all__ = ["ACTOR", "CHANGES_SHOWN", "PLATFORM", "approve", "capacity", "edit", "origin", "read_only_reason",
           "recent_changes", "refuse_if_read_only", "reject", "revert", "stale_session_rows", "stale_sessions",
           "tab_state"]
