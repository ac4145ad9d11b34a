"""Live memory in the plugin: the ``pre_llm_call`` part that tells a running session what changed in
MEMORY.md / USER.md since its system prompt was frozen (issue 33).

The block rides Hermes' own channel, the context ``pre_llm_call`` returns (Hermes 0.19
``agent/turn_context.py`` appends it to the user turn and stores it in ``api_content``), so the
system prompt's bytes, and the provider's prompt cache, never change. What each session was sent
is remembered in memdeck.db (:mod:`memdeck.core.live_memory.record`), once per session and entry
hash.

Cost of a turn when nothing changed: two ``stat`` calls (MEMORY.md, USER.md) and the config
reloader's one ``stat`` of config.yaml, compared with what this session last saw; no state.db
or memdeck.db read. Only when a file changed (or a session is seen for the first time in this
process) is the session's stored prompt read from state.db (``mode=ro``) and diffed
(:func:`memdeck.core.context.frozen.compare`).

Never sent: anything with ``live_memory: off``; anything on a slash-command turn (it waits for the
next turn); a pending write (it is not in the files until approved); a store switched off in
config.yaml or replaced by a provider (no block in the prompt: nothing to compare); a blocked
entry's text (its ``[BLOCKED: ...]`` placeholder instead, :mod:`.hermes_rules`).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..config import Config
from ..context.frozen import compare
from ..hermes_version import HermesVersion
from ..home import HermesHome
from ..live_memory.block import delta_block, notice_line
from ..live_memory.budget import fit
from ..live_memory.changes import LiveChange, live_changes
from ..live_memory.record import Delivery, load_deliveries, record
from ..live_memory.settings import LiveSettings, live_settings
from ..memory.prompt_block import read_entries_as_hermes
from ..provider_settings import provider_settings
from .hermes_rules import HermesRules, hermes_rules
from .session_prompt import stored_prompt

logger = logging.getLogger("memdeck.live_memory")

#: Sessions whose stamp is kept (a gateway serves many chats; the oldest are forgotten first).
_MAX_SESSIONS = 512


@dataclass(frozen=True)
class LiveOutcome:
    """What one turn decided (tests, the bench): ``checked`` the session was diffed this turn (a
    file changed or it was new to this process), ``sent``/``over`` the changes in the block / left
    for /new, ``text`` the block (``""`` for none), ``skipped`` why nothing was looked at."""

    checked: bool = False
    sent: tuple[LiveChange, ...] = ()
    over: tuple[LiveChange, ...] = ()
    text: str = ""
    skipped: str = ""


def is_slash_command(text: str) -> bool:
    """A user turn that is a slash command (``/new``, ``/skill args``): its first non-blank char is ``/``."""
    return isinstance(text, str) and text.lstrip().startswith("/")


def user_turns(history: Sequence[Any] | None) -> int:
    """The number of ``user`` messages of the history Hermes passes (the current turn included)."""
    return sum(1 for m in history or () if isinstance(m, Mapping) and m.get("role") == "user")


class LiveMemory:
    """The live-memory part of the plugin for one Hermes home.

    Args:
        home: the home.
        config: a zero-argument callable returning the current :class:`Config` (the plugin's
            :class:`~memdeck.core.plugin.entry.ConfigReloader`: the same object until config.yaml changes).
        rules: the running Hermes' threat rules (default: :func:`.hermes_rules.hermes_rules`).
        clock: epoch seconds (tests).
    """

    def __init__(self, home: HermesHome, config: Callable[[], Config], *, rules: HermesRules | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.home = home
        self._config_src = config
        self._rules = rules
        self.clock = clock
        self._settings_of: tuple[Config, LiveSettings] | None = None
        self._seen: dict[str, tuple[tuple[Any, ...], Config]] = {}
        self._sent: dict[str, set[str]] = {}
        self._lock = threading.RLock()
        self.last: LiveOutcome | None = None

    # -- plumbing ------------------------------------------------------------------
    @property
    def rules(self) -> HermesRules:
        if self._rules is None:
            self._rules = hermes_rules()
        return self._rules

    def settings(self, cfg: Config | None = None) -> LiveSettings:
        """The ``memdeck:`` settings of the current config (parsed once per config object)."""
        cfg = self._config_src() if cfg is None else cfg
        hit = self._settings_of
        if hit is not None and hit[0] is cfg:
            return hit[1]
        s = live_settings(cfg.raw)
        for w in s.warnings:
            logger.warning("memdeck: %s", w)
        self._settings_of = (cfg, s)
        return s

    def _files_stamp(self) -> tuple[Any, ...]:
        out: list[Any] = []
        for t in ("memory", "user"):
            try:
                st = os.stat(self.home.memory_file(t))
                out.append((st.st_ino, st.st_mtime_ns, st.st_size))
            except OSError:
                out.append(None)
        return tuple(out)

    def _remember(self, sid: str, stamp: tuple[Any, ...], cfg: Config) -> None:
        self._seen.pop(sid, None)
        self._seen[sid] = (stamp, cfg)
        while len(self._seen) > _MAX_SESSIONS:
            self._seen.pop(next(iter(self._seen)))

    # -- the hook ------------------------------------------------------------------
    def pre_llm_call(self, session_id: str = "", user_message: str = "", conversation_history: list | None = None,
                     turn_id: Any = None, **_: Any) -> dict[str, str] | None:
        """The ``pre_llm_call`` part: ``{"context": block}`` or None (see the module docstring)."""
        out = self.run_turn(session_id, user_message, conversation_history, turn_id)
        return {"context": out.text} if out.text else None

    def run_turn(self, session_id: str, user_message: str = "", history: Sequence[Any] | None = None,
                 turn_id: Any = None) -> LiveOutcome:
        """:meth:`pre_llm_call` returning the whole :class:`LiveOutcome`."""
        if not session_id:
            return LiveOutcome(skipped="no session id")
        cfg = self._config_src()
        s = self.settings(cfg)
        if s.mode == "off":
            self.last = LiveOutcome(skipped="off")
            return self.last
        stamp = self._files_stamp()
        with self._lock:
            seen = self._seen.get(session_id)
            if seen is not None and seen[0] == stamp and seen[1] is cfg:
                self.last = LiveOutcome(skipped="unchanged")
                return self.last
            if is_slash_command(user_message):  # nothing on a slash command; it waits for the next turn
                self.last = LiveOutcome(skipped="slash command")
                return self.last
            out = self._check(session_id, cfg, s, history, turn_id)
            self._remember(session_id, stamp, cfg)
            self.last = out
            return out

    def _check(self, sid: str, cfg: Config, s: LiveSettings, history: Sequence[Any] | None, turn_id: Any) -> LiveOutcome:
        prompt = stored_prompt(self.home.state_db, sid)
        if not prompt:  # not stored yet: the prompt being built holds the files as they are
            return LiveOutcome(checked=True, skipped="no stored prompt")
        ps = provider_settings(cfg, self.home.path, HermesVersion.of(self.rules.version, "running Hermes"))
        enabled = {"memory": ps.memory_enabled, "user": ps.user_profile_enabled}
        disk: dict[str, Sequence[str]] = {t: read_entries_as_hermes(self.home.memory_file(t)) for t in ("memory", "user")}
        rules = self.rules
        fm = compare(prompt, disk, enabled, rules.verdict)
        if not fm.in_prompt or not fm.changes:
            return LiveOutcome(checked=True)
        changes = live_changes(fm.changes, rules.marker, rules.blocked)
        mine = self._sent.setdefault(sid, set())
        done = load_deliveries(self.home, sid)
        todo = [c for c in changes if c.key not in done and c.key not in mine]
        if not todo:
            return LiveOutcome(checked=True)
        sent: tuple[LiveChange, ...]
        over: tuple[LiveChange, ...]
        if s.mode == "notice":
            text, sent, over = notice_line(todo), tuple(todo), ()
        else:
            f = fit(todo, s.max_chars, delta_block)
            text, sent, over = f.text, f.sent, f.over
        now = self.clock()
        turn = user_turns(history)
        tid = None if turn_id is None else str(turn_id)
        reason = f"over budget (memdeck.live_memory_max_chars: {s.max_chars}): waits for /new"
        rows = [Delivery(sid, c.key, c.target, c.change, "delivered", s.mode, None, turn, tid, now) for c in sent]
        rows += [Delivery(sid, c.key, c.target, c.change, "withheld", s.mode, reason, turn, tid, now) for c in over]
        if not record(self.home, rows):
            logger.warning("memdeck: memdeck.db is busy: this turn's live memory delivery is remembered in this "
                           "process only")
        mine.update(c.key for c in (*sent, *over))
        return LiveOutcome(checked=True, sent=tuple(sent), over=tuple(over), text=text)


__all__ = ["LiveMemory", "LiveOutcome", "is_slash_command", "user_turns"]
