"""The system prompt Hermes stored for one session, read by the plugin (live memory) from state.db.

A small read-only reader so the plugin does not carry memdeck's whole state.db reader: state.db is
opened ``file:<path>?mode=ro`` with a short busy timeout (a hook must not hold the turn), columns
are selected by name, and the prompt is ``sessions.system_prompt``, else (schema >= 23: Hermes 0.20
``hermes_state.py:169-170``, 0.22 ``hermes_state_sessions.py:738-742``) ``system_prompts.prompt``
by ``sessions.system_prompt_hash``, as ``SessionDB.get_session`` joins it back. The same rule as
:meth:`memdeck.core.sessions.listing.SessionReader.system_prompt`.
"""

from __future__ import annotations

import sqlite3
import urllib.parse
from pathlib import Path


def stored_prompt(state_db: Path, session_id: str, *, timeout: float = 0.5) -> str:
    """The stored prompt of ``session_id`` (``""`` when none, or when state.db is missing, locked
    past ``timeout`` seconds or not readable). Never raises, never writes."""
    if not Path(state_db).is_file():
        return ""
    uri = "file:" + urllib.parse.quote(str(Path(state_db).absolute())) + "?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=timeout)
    except sqlite3.Error:
        return ""
    try:
        conn.text_factory = lambda b: b.decode("utf-8", "replace")
        scols = {r[1] for r in conn.execute("PRAGMA table_info(sessions)")}
        text = None
        if "system_prompt" in scols:
            row = conn.execute("SELECT system_prompt FROM sessions WHERE id = ?", (session_id,)).fetchone()
            text = row[0] if row else None
        if not text and "system_prompt_hash" in scols:
            pcols = {r[1] for r in conn.execute("PRAGMA table_info(system_prompts)")}
            if {"hash", "prompt"} <= pcols:
                row = conn.execute("SELECT p.prompt FROM sessions s JOIN system_prompts p ON p.hash = "
                                   "s.system_prompt_hash WHERE s.id = ?", (session_id,)).fetchone()
                text = row[0] if row else None
        return text if isinstance(text, str) else ""
    except sqlite3.Error:
        return ""
    finally:
        conn.close()


__all__ = ["stored_prompt"]
