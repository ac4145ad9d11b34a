"""Who sent the slash command a plugin handler is running for (Hermes 0.19's gateway).

Hermes 0.19 calls a plugin command's handler with the argument text only
(``gateway/run.py`` ``_handle_message``, "Plugin-registered slash commands":
``plugin_handler(user_args)``), but it fires ``pre_gateway_dispatch`` earlier in the same
coroutine with the ``MessageEvent`` and the ``GatewayRunner`` (``gateway/run.py`` ~10006).
:func:`remember` is that hook: it keeps both in a ``ContextVar`` of the message's task, which the
command handler reads with :func:`current`. Kept tiny and import-free: it runs on every message.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any, NamedTuple


class ChatOrigin(NamedTuple):
    """The message being handled: ``event`` (Hermes' ``MessageEvent``) and ``gateway`` (its runner)."""

    event: Any
    gateway: Any


_CURRENT: ContextVar[ChatOrigin | None] = ContextVar("memdeck_chat_origin", default=None)


def remember(event: Any = None, gateway: Any = None, **_: Any) -> None:
    """The ``pre_gateway_dispatch`` hook: remember this message for its command handler; returns
    None (Hermes' "normal dispatch")."""
    _CURRENT.set(ChatOrigin(event, gateway) if event is not None else None)


def current() -> ChatOrigin | None:
    """The message this task is handling, or None outside a gateway message (the CLI)."""
    return _CURRENT.get()
