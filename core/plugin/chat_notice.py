"""A notice where the user is (issue 35 #2): the agent's reply ends with one line when a memory
write waits for review.

When Hermes' write gate stages a memory write in a session (``memory.write_approval: true``: the
``memory`` tool answers ``{"staged": true, "pending_id": ...}``), or the oldest pending write is
older than ``memdeck.alerts.pending_age_hours`` (default 24), the agent's next final reply in that
chat ends with::

    1 memory write waits for review: /memdeck pending

(``N memory writes wait for review: /memdeck pending`` for N records; N counts every record of
``pending/memory/``). Never more than once per record per chat: which record each chat was told
about is kept in memdeck.db ``chat_notices`` (so every process serving the chat agrees). Off with
``memdeck: chat_notices: false`` in the home's config.yaml (:mod:`..live_memory.settings`).

Hooks (Hermes 0.19.0 and 0.22.2, read in their source):

* ``post_tool_call`` (``model_tools.py`` ``_emit_post_tool_call_hook``: ``tool_name``, ``args``,
  ``result``, ``session_id``, ...; fired for the agent-loop tools, ``memory`` included):
  :meth:`ChatNotices.post_tool_call` remembers the ids the gate staged, per session.
* ``transform_llm_output`` (0.19 ``agent/turn_finalizer.py``: once per turn after the tool loop,
  ``response_text``, ``session_id``, ``model``, ``platform``, the first non-empty string returned
  replaces the reply; 0.22.2 ``apply_llm_output_transform``, the same arguments plus ``turn_id``,
  run before the reply is persisted, so state.db stores the line too): :meth:`ChatNotices.transform`
  appends the line. ``post_llm_call`` cannot change the reply in either version (its return value
  is ignored), so it is not used. The gateway sends a transformed reply again in full (0.19
  ``gateway/run.py``: "Plugin hooks (e.g. transform_llm_output) may have appended content").

The chat is the gateway's session key (``HERMES_SESSION_KEY`` of ``gateway/session_context.py``,
``agent:main:telegram:dm:42``: it outlives ``/new``), else ``session:<session id>`` (the CLI).

Cost of a turn when nothing is pending: one ``stat`` of ``pending/memory/`` (the records are read
again only when the directory changed), no memdeck.db access.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from .. import jsondata
from ..config import Config
from ..deck import db as deckdb
from ..fsio import list_names
from ..home import HermesHome
from ..live_memory.settings import LiveSettings, live_settings

logger = logging.getLogger("memdeck.plugin")

#: the tool whose staged answers are remembered (Hermes' built-in memory tool)
MEMORY_TOOL = "memory"
#: a pending record larger than this is not read (Hermes' records are a few hundred bytes)
_MAX_RECORD_BYTES = 1 << 20
#: sessions whose staged ids are kept before the oldest are forgotten (a gateway serves many)
_MAX_SESSIONS = 512


def notice_line(n: int) -> str:
    """``1 memory write waits for review: /memdeck pending``, plural for ``n`` != 1."""
    return f"{n} memory write{'s wait' if n != 1 else ' waits'} for review: /memdeck pending"


def staged_id(result: Any) -> str | None:
    """The ``pending_id`` of a ``memory`` tool result that Hermes' write gate staged (the tool's
    JSON: ``{"success": true, "staged": true, "pending_id": "<8 hex>", ...}``), else None."""
    if isinstance(result, (bytes, str)):
        try:
            result = jsondata.loads(result)
        except ValueError:
            return None
    if isinstance(result, dict) and result.get("staged") is True:
        pid = result.get("pending_id")
        if isinstance(pid, str) and pid and len(pid) <= 64 and "/" not in pid and pid.isprintable():
            try:
                pid.encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate: no record is named so
                return None
            return pid
    return None


def chat_key(session_id: str) -> str:
    """The chat a reply goes to: the gateway's session key when this thread serves a gateway
    message (read only when ``gateway.session_context`` is already loaded), else
    ``session:<session_id>``."""
    mod = sys.modules.get("gateway.session_context")
    get = getattr(mod, "get_session_env", None)
    if callable(get):
        try:
            key = get("HERMES_SESSION_KEY", "")
        except Exception:  # noqa: BLE001 - a Hermes without that variable: the session is the chat
            key = ""
        if isinstance(key, str) and key.strip():
            return key.strip()
    return f"session:{session_id}"


def load_noticed(home: HermesHome, chat: str) -> set[str]:
    """The pending ids ``chat`` was told about (memdeck.db ``chat_notices``); empty when memdeck.db
    does not exist or predates the table. Read-only; never raises."""
    return deckdb.read_quietly(home, lambda conn: {
        str(r[0]) for r in conn.execute("SELECT pending_id FROM chat_notices WHERE chat = ?", (chat,))}, set())


def record_noticed(home: HermesHome, chat: str, rows: list[tuple[str, str]], session_id: str, at: float, *,
                   timeout: float = 0.5) -> bool:
    """Remember that ``chat`` was told about each ``(pending_id, reason)`` of ``rows`` (the first
    notice of a record wins). True when written; False (never an exception) when memdeck.db is
    locked, read-only or unusable."""
    if not rows:
        return True

    def write(conn: sqlite3.Connection) -> None:
        with deckdb.transaction(conn):
            conn.executemany("INSERT OR IGNORE INTO chat_notices (chat, pending_id, reason, session_id, at) "
                             "VALUES (?, ?, ?, ?, ?)", [(chat, pid, why, session_id, at) for pid, why in rows])

    return deckdb.write_quietly(home, write, timeout=timeout)


class ChatNotices:
    """The chat notice of one Hermes home (module docstring).

    Args:
        home: the home.
        config: a zero-argument callable returning the current :class:`Config` (the plugin's reloader).
        clock: epoch seconds (tests).
    """

    def __init__(self, home: HermesHome, config: Callable[[], Config], *, clock: Callable[[], float] = time.time) -> None:
        self.home = home
        self._config_src = config
        self.clock = clock
        self._lock = threading.Lock()
        self._staged: dict[str, list[str]] = {}
        self._settings_of: tuple[Config, LiveSettings] | None = None
        self._records: tuple[Any, dict[str, float]] = (None, {})
        self._told: dict[str, set[str]] = {}
        #: the last turn's decision (tests): the line appended, or why not
        self.last: str = ""

    def settings(self) -> LiveSettings:
        cfg = self._config_src()
        hit = self._settings_of
        if hit is not None and hit[0] is cfg:
            return hit[1]
        s = live_settings(cfg.raw)
        self._settings_of = (cfg, s)
        return s

    # -- the pending records ------------------------------------------------------------
    def pending(self) -> dict[str, float]:
        """``{pending id: created_at}`` of ``pending/memory/*.json`` (a record without a usable
        ``created_at`` counts with age 0). Read again only when the directory's stat changed."""
        d = self.home.pending_dir
        try:
            st = os.stat(d)
        except OSError:
            return {}
        stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
        if self._records[0] == stamp:
            return self._records[1]
        out: dict[str, float] = {}
        try:  # names that are not UTF-8 are never read (fsio.list_names: neither Hermes nor memdeck writes them)
            names = list_names(d, ".json")[0]
        except OSError:
            return {}
        for name in names:
            created = 0.0
            try:
                fd = os.open(os.path.join(d, name), os.O_RDONLY | os.O_NONBLOCK)
                try:
                    raw = os.read(fd, _MAX_RECORD_BYTES) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
                finally:
                    os.close(fd)
                rec = jsondata.loads(raw.decode("utf-8", "replace")) if raw else None
                val = rec.get("created_at") if isinstance(rec, dict) else None
                if isinstance(val, (int, float)) and not isinstance(val, bool) and val == val:
                    created = float(val)
            except (OSError, ValueError):
                pass
            out[name[:-5]] = created
        self._records = (stamp, out)
        return out

    # -- the hooks ----------------------------------------------------------------------
    def post_tool_call(self, tool_name: str = "", result: Any = None, session_id: str = "", **_: Any) -> None:
        """Remember a write Hermes' gate staged in ``session_id``'s turn."""
        if tool_name != MEMORY_TOOL or not session_id:
            return
        pid = staged_id(result)
        if pid is None:
            return
        with self._lock:
            ids = self._staged.pop(session_id, [])
            ids.append(pid)
            self._staged[session_id] = ids
            while len(self._staged) > _MAX_SESSIONS:
                self._staged.pop(next(iter(self._staged)))

    def transform_llm_output(self, response_text: str = "", session_id: str = "", **_: Any) -> str | None:
        """The reply with the notice line appended, or None (unchanged)."""
        line = self.notice_for(session_id or "")
        if not line or not isinstance(response_text, str) or not response_text.strip():
            return None
        if response_text.rstrip().endswith(line):
            return None
        return response_text.rstrip() + "\n\n" + line

    def notice_for(self, session_id: str) -> str:
        """The line this session's reply ends with now (``""`` for none), remembered as told."""
        with self._lock:
            staged = self._staged.pop(session_id, []) if session_id else []
        if not self.settings().chat_notices:
            self.last = "off"
            return ""
        records = self.pending()
        if not records:
            self.last = "nothing pending"
            return ""
        now = self.clock()
        limit = self.settings().pending_age_hours * 3600.0
        triggers: dict[str, str] = {pid: "staged" for pid in staged if pid in records}
        for pid, created in records.items():
            if pid not in triggers and created and now - created > limit:
                triggers[pid] = "age"
        if not triggers:
            self.last = "no new or old record"
            return ""
        chat = chat_key(session_id)
        told = self._told.setdefault(chat, set())
        new = {p: r for p, r in triggers.items() if p not in told}
        if new:
            new = {p: r for p, r in new.items() if p not in load_noticed(self.home, chat)}
        if not new:
            self.last = "already told"
            return ""
        if not record_noticed(self.home, chat, sorted(new.items()), session_id, now):
            logger.warning("memdeck: memdeck.db is busy: this chat notice is remembered in this process only")
        told.update(new)
        line = notice_line(len(records))
        self.last = line
        return line


__all__ = ["MEMORY_TOOL", "ChatNotices", "chat_key", "load_noticed", "notice_line", "record_noticed", "staged_id"]
