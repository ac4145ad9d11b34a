"""How a person starts a new Hermes session on each platform (the only way a running session sees
memory written after its prompt was built).

One concept: the words to say it. Facts from Hermes 0.17-0.22 ``hermes_cli/commands.py``:
``CommandDef("new", "Start a new session (fresh session ID + history)", aliases=("reset",))`` in
the CLI, the TUI and every gateway platform; the CLI also has ``/clear`` ("Clear screen and start
a new session", ``cli_only``); Slack keeps ``/new`` as a native slash command and reaches the alias
as ``/hermes reset`` (``_SLACK_PRIORITY_ALIASES`` and its comment, 0.19 :1130-1150). A cron job
starts a new session at each run; an editor (ACP) session is replaced from the editor.
"""

from __future__ import annotations

#: ``sessions.source`` -> how to start a new session there.
_HOW = {
    "cli": "type /new (or /reset, /clear) in the Hermes CLI",
    "tui": "type /new (or /reset) in the Hermes terminal UI",
    "desktop": "type /new (or /reset) in the Hermes desktop app",
    "webui": "type /new (or /reset) in the Hermes WebUI",
    "slack": "send /new in Slack (the alias is /hermes reset)",
    "cron": "nothing to do: the next run of the cron job starts a new session",
    "acp": "start a new session from your editor",
    "subagent": "nothing to do: a subagent session ends with its task",
    "tool": "nothing to do: a tool session ends with its call",
}


def new_session_hint(source: str | None) -> str:
    """What starts a new session on platform ``source`` (``sessions.source``: ``cli``,
    ``telegram``, ``discord``, ``slack``, ``cron`` ...), as a phrase; a gateway platform not listed
    gets ``send /new (or /reset) in the <platform> chat``."""
    key = (source or "").strip().lower()
    if key in _HOW:
        return _HOW[key]
    name = key.capitalize() if key and key.isascii() and key.isalnum() else "chat"
    return f"send /new (or /reset) in the {name} chat"


def not_seen_until(source: str | None, session_id: str) -> str:
    """One sentence for after a memory write: the running session will not see it, and how to
    start one that does (:func:`new_session_hint`)."""
    where = f" ({source})" if source else ""
    return (f"the running session {session_id}{where} will not see this until a new session: "
            f"{new_session_hint(source)}")


__all__ = ["new_session_hint", "not_seen_until"]
