"""memdeck's Hermes plugin: ``register(ctx)``.

One module serves both ways Hermes 0.19 loads plugins (``hermes_cli/plugins.py``):

* the ``hermes_agent.plugins`` entry point ``memdeck = "core.hermes_plugin"`` (memdeck installed
  into Hermes' environment): ``_load_entrypoint_module`` calls ``ep.load()``, which for a value
  without ``:attr`` returns this module, then ``getattr(module, "register")``. (A
  ``module:register`` value would hand Hermes the function and fail with "no register()
  function".)
* the directory plugin ``$HERMES_HOME/plugins/memdeck/`` written by ``memdeck plugin install``,
  imported as ``hermes_plugins.memdeck`` with this package vendored as ``._core``.

Either way it must be listed in ``plugins.enabled``. If both are present the entry point wins
(Hermes scans it last and keys both ``memdeck``).

Registered: hooks ``on_session_start``, ``pre_llm_call`` (MemLock's reminder block, then live
memory's block of :mod:`.live`, then the request queue of :mod:`.agent_requests`: a correction's
line, a rebuild of the session's prompt), ``on_session_end``; tool
``guard_pin`` (toolset ``guard``, MemLock's schema); slash commands ``/guard`` and ``/memdeck``
(:mod:`.chat_command`, imported when the command first runs, so no turn loads the memory store),
``pre_gateway_dispatch`` (:mod:`.chat_origin`: remembers the message's sender for ``/memdeck``),
``post_tool_call`` + ``transform_llm_output`` (:mod:`.chat_notice`: a staged or old pending write ends
the agent's next reply in that chat with one line), and ``pre_api_request`` / ``post_api_request``
(:mod:`.usage_hook`: each request's token buckets, system-prompt hash and tool count into memdeck.db,
issue 37). Every callback
catches every exception, logs it and returns None (hooks) or an ``Error: ...`` string (tool,
command), so the plugin can never break a turn. Config is MemLock's ``memlock:`` section of
``$HERMES_HOME/config.yaml``, re-read when the file changes.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from ..config import Config, load_config
from ..home import HermesHome, resolve_home
from .agent_requests import AgentRequests
from .chat_notice import ChatNotices
from .chat_origin import remember
from .guard import Guard
from .live import LiveMemory
from .pin_tool import PIN_SCHEMA
from .usage_hook import UsageRecorder

logger = logging.getLogger("memdeck.plugin")

#: ``/memdeck``'s words for Hermes' command lists and Discord's picker (``args_hint``, Hermes 0.19
#: ``PluginContext.register_command``); kept here so registering never imports :mod:`.chat_command`.
MEMDECK_DESCRIPTION = "memdeck: review pending memory writes (pending, approve, edit, reject), history, revert, stale"
#: Discord shows ``"Arguments: " + hint`` cut at 100 chars (0.19 ``plugins/platforms/discord/adapter.py``
#: ``_build_auto_slash_command``): at most 89 chars here.
MEMDECK_ARGS_HINT = "pending | approve ID|--all-clean | reject ID|--stale | edit | revert | history | stale"

#: The live guard of this process (set by :func:`register`; tests and the bench read it).
GUARD: Guard | None = None
#: The live-memory part of this process (issue 33; set by :func:`register`).
LIVE: LiveMemory | None = None
#: The chat notice of this process (issue 35; set by :func:`register`).
NOTICES: ChatNotices | None = None
#: The request queue's consumer of this process (rebuild, correction; set by :func:`register`).
REQUESTS: AgentRequests | None = None


def hermes_home() -> HermesHome:
    """The home Hermes runs with: ``hermes_constants.get_hermes_home()`` when importable (it
    honours profiles), else memdeck's own resolution (``HERMES_HOME``, active profile, ~/.hermes)."""
    try:
        from hermes_constants import get_hermes_home

        return HermesHome(Path(get_hermes_home()))
    except Exception:  # noqa: BLE001 - any Hermes-side failure falls back to memdeck's own resolution
        return resolve_home(None)


class ConfigReloader:
    """Returns the home's :class:`Config`, re-reading ``config.yaml`` only when its stat changes."""

    def __init__(self, home: HermesHome) -> None:
        self.home = home
        self._sig: tuple | None = None
        self._cfg: Config = Config()

    def _signature(self) -> tuple:
        try:
            st = os.stat(self.home.config_path)
        except OSError:
            return (None,)
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    def __call__(self) -> Config:
        sig = self._signature()
        if sig != self._sig:
            self._cfg = load_config(self.home)
            self._sig = sig
            for w in self._cfg.warnings:
                logger.warning("memdeck: %s", w)
        return self._cfg


def _safe_hook(name: str, fn: Any) -> Any:
    def hook(**kwargs: Any) -> Any:
        try:
            return fn(**kwargs)
        except Exception as exc:  # never break the agent: log, inject nothing
            logger.warning("memdeck: %s hook failed (%s: %s); continuing without it", name, type(exc).__name__, exc,
                           exc_info=logger.isEnabledFor(logging.DEBUG))
            return None

    hook.__name__ = f"memdeck_{name}"
    return hook


def _part(name: str, fn: Any, kw: dict[str, Any]) -> str:
    """One part of ``pre_llm_call``'s context: its text, ``""`` when it has none or failed (logged)."""
    try:
        res = fn(**kw)
    except Exception as exc:
        logger.warning("memdeck: %s failed (%s: %s); continuing without it", name, type(exc).__name__, exc,
                       exc_info=logger.isEnabledFor(logging.DEBUG))
        return ""
    return str(res["context"]) if isinstance(res, dict) and res.get("context") else ""


def make_callbacks(guard: Guard, live: LiveMemory | None = None, notices: ChatNotices | None = None,
                   requests: AgentRequests | None = None) -> dict[str, Any]:
    """The exception-proof callables :func:`register` hands to Hermes, by name. ``pre_llm_call``
    returns MemLock's reminder block, live memory's block (issue 33) and the queued corrections
    (issue 34 #3; a queued rebuild is acted on there too, :mod:`.agent_requests`) joined by a blank
    line, as Hermes joins the contexts of several hooks (0.19 ``agent/turn_context.py``)."""

    def on_session_start(**kw: Any) -> None:
        guard.on_session_start(**kw)

    def on_session_end(**kw: Any) -> None:
        guard.on_session_end(**kw)

    def pre_llm_call(**kw: Any) -> Any:
        parts = [_part("pre_llm_call hook", guard.pre_llm_call, kw)]
        if live is not None:
            parts.append(_part("live memory pre_llm_call hook", live.pre_llm_call, kw))
        if requests is not None:
            parts.append(_part("request queue pre_llm_call hook", requests.pre_llm_call, kw))
        text = "\n\n".join(p for p in parts if p)
        return {"context": text} if text else None

    def guard_pin(args: Any = None, **kw: Any) -> str:
        try:
            return guard.pin_tool(args, **kw)
        except Exception as exc:  # noqa: BLE001 - pin_tool already catches; belt and braces
            return f"Error: guard_pin failed ({type(exc).__name__})"

    def guard_cmd(raw_args: str = "", *_: Any, **__: Any) -> str:
        try:
            return guard.status_text(raw_args)
        except Exception as exc:  # noqa: BLE001 - a slash command never raises into Hermes: said in its answer
            logger.warning("memdeck: /guard failed: %s", exc)
            return f"MemLock status unavailable ({type(exc).__name__}: {exc})"

    def memdeck_cmd(raw_args: str = "", *_: Any, **__: Any) -> str:
        try:
            from .chat_command import handler  # lazy: the memory store only when /memdeck runs

            return handler(guard.home, raw_args)
        except Exception as exc:  # a slash command never raises into Hermes: said in its answer
            logger.warning("memdeck: /memdeck failed: %s", exc, exc_info=logger.isEnabledFor(logging.DEBUG))
            return f"memdeck: failed ({type(exc).__name__}: {exc})"

    def post_tool_call(**kw: Any) -> None:
        if notices is not None:
            notices.post_tool_call(**kw)

    def transform_llm_output(**kw: Any) -> str | None:
        return notices.transform_llm_output(**kw) if notices is not None else None

    recorder = UsageRecorder(guard.home)
    return {
        "pre_gateway_dispatch": _safe_hook("pre_gateway_dispatch", remember),
        "post_api_request": _safe_hook("post_api_request", recorder),
        "pre_api_request": _safe_hook("pre_api_request", recorder.pre),
        "post_tool_call": _safe_hook("post_tool_call", post_tool_call),
        "transform_llm_output": _safe_hook("transform_llm_output", transform_llm_output),
        "memdeck": memdeck_cmd,
        "on_session_start": _safe_hook("on_session_start", on_session_start),
        "pre_llm_call": _safe_hook("pre_llm_call", pre_llm_call),
        "on_session_end": _safe_hook("on_session_end", on_session_end),
        "guard_pin": guard_pin,
        "guard": guard_cmd,
    }


def register(ctx: Any) -> None:
    """Hermes plugin entry: wire the guard's hooks, the ``guard_pin`` tool and ``/guard``.

    Never raises for runtime reasons: a failure to build the guard is logged and nothing is
    registered (Hermes would otherwise record the plugin as failed, which is also harmless).
    """
    global GUARD, LIVE, NOTICES, REQUESTS
    home = hermes_home()
    reloader = ConfigReloader(home)
    cfg = reloader()
    if "memlock" in cfg.plugins_enabled:
        logger.warning("memdeck: the memlock plugin is enabled too; both guard memlock/ and register guard_pin "
                       "and /guard. Remove 'memlock' from plugins.enabled (memdeck keeps its config and anchors).")
    guard = Guard(home, reloader, actor="plugin")
    GUARD = guard
    live = LiveMemory(home, reloader)
    LIVE = live
    notices = ChatNotices(home, reloader)
    NOTICES = notices
    requests = AgentRequests(home)
    REQUESTS = requests
    cb = make_callbacks(guard, live, notices, requests)
    for hook in ("on_session_start", "pre_llm_call", "on_session_end", "pre_gateway_dispatch", "post_tool_call",
                 "transform_llm_output", "pre_api_request", "post_api_request"):
        ctx.register_hook(hook, cb[hook])
    ctx.register_tool(
        name="guard_pin",
        toolset="guard",
        schema=PIN_SCHEMA,
        handler=cb["guard_pin"],
        description=PIN_SCHEMA["description"],
    )
    ctx.register_command(name="guard", handler=cb["guard"],
                         description="MemLock status (memdeck): integrity score, anchors, drift log")
    try:
        ctx.register_command(name="memdeck", handler=cb["memdeck"], description=MEMDECK_DESCRIPTION,
                             args_hint=MEMDECK_ARGS_HINT)
    except TypeError:  # a Hermes before args_hint: the command without the picker's argument field
        ctx.register_command(name="memdeck", handler=cb["memdeck"], description=MEMDECK_DESCRIPTION)
