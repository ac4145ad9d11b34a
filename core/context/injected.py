"""What was appended to each user turn before it went to the model, and who appended it.

One concept. Hermes 0.19+ appends a turn's ephemeral context to the API copy of the user message
and stores those exact bytes in the row's ``api_content`` (0.19 ``agent/turn_context.py``
``compose_user_api_content``; 0.22 the same through ``compose_multimodal_context_part``)::

    api_content = content + "\\n\\n" + "\\n\\n".join([fence?, plugin_context?])

* ``fence``: the memory provider's recall, ``build_memory_context_block(prefetch)`` (the
  ``<memory-context>`` fence of ``agent/memory_manager.py``; :mod:`memdeck.core.memory.context_fence`);
* ``plugin_context``: every ``pre_llm_call`` hook's context joined with blank lines, then the
  gateway's one-shot notes. MemLock's reminder block (and memdeck's plugin, which runs MemLock's
  engine) opens with :data:`memdeck.core.anchors.rules.REMINDER_MARKER` followed by ``"  - "``
  lines; what is left cannot be split further (a plugin's text may hold blank lines itself): it
  is one part, named after the plugin when exactly one other plugin is enabled, else ``unknown``.

A multimodal turn (list content) stores no ``api_content`` on 0.22: the same text is the list's
last text part (``#71998``); it is read from there. An ``api_content`` that does not start with
the stored content replaced it instead of extending it (0.20+ interrupt scaffolding): one
``unknown`` part, the whole text.

Hermes 0.17 and 0.18 store no ``api_content`` (their state.db has no such column): nothing can be
shown, and :class:`InjectedView` says so (``recorded`` False, the reason) instead of an empty list.

Pure functions of the rows (:class:`memdeck.core.sessions.records.UserTurn`); nothing here reads.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..anchors.rules import REMINDER_MARKER
from ..memory.context_fence import fence_body, fence_spans
from .tokens import hermes_estimate

#: Sources of an injected part (``context --json`` ``injected[].source``).
SOURCES = ("provider", "memlock", "plugin", "unknown")
#: The plugin names whose reminder block opens with MemLock's marker.
MEMLOCK_PLUGINS = ("memlock", "hermes-memlock", "memdeck")
#: Why nothing can be shown on Hermes 0.17 / 0.18 (a named degradation).
NOT_STORED = ("not recorded: this Hermes (0.17 / 0.18) stores no messages.api_content, so what a memory provider "
              "or a plugin appended to a user turn is never kept; Hermes 0.19+ stores it")
_JSON_PREFIX = "\x00json:"


@dataclass(frozen=True)
class Injection:
    """One part appended to a user turn.

    Attributes:
        turn_id: the user row's ``messages.id``.
        source: ``provider`` (the ``<memory-context>`` fence), ``memlock`` (the reminder block),
            ``plugin`` (another plugin's ``pre_llm_call`` context, its name known) or ``unknown``.
        name: the provider's or plugin's name, or words for what it is.
        text: exactly what was appended (the whole fence for a provider).
        chars: ``len(text)``. tokens: Hermes' estimate of ``text`` (``estimate_tokens_rough`` of
            the home's version).
        recalled: for a provider, the recalled text inside the fence (tags and system note
            removed); None otherwise.
        time: the turn's epoch seconds (None when unknown).
    """

    turn_id: int
    source: str
    name: str
    text: str
    chars: int
    tokens: int
    recalled: str | None = None
    time: float | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"turn_id": self.turn_id, "source": self.source, "name": self.name, "chars": self.chars,
                             "tokens": self.tokens, "text": self.text, "time": self.time}
        if self.recalled is not None:
            d["recalled"] = self.recalled
        return d


@dataclass(frozen=True)
class TurnInjections:
    """Everything appended to one user turn (``parts`` empty: nothing was injected)."""

    turn_id: int
    time: float | None
    parts: tuple[Injection, ...] = ()

    @property
    def chars(self) -> int:
        return sum(p.chars for p in self.parts)

    @property
    def tokens(self) -> int:
        return sum(p.tokens for p in self.parts)

    def by(self, source: str) -> tuple[Injection, ...]:
        return tuple(p for p in self.parts if p.source == source)

    def to_dict(self) -> dict[str, Any]:
        return {"turn_id": self.turn_id, "time": self.time, "chars": self.chars, "tokens": self.tokens,
                "sources": [p.source for p in self.parts], "nothing_injected": not self.parts}


@dataclass(frozen=True)
class InjectedView:
    """What was appended to the followed session's user turns (its active region, oldest first).

    Attributes:
        recorded: False when this Hermes does not store it (then :attr:`reason` says so).
        reason: why nothing can be shown, else None.
        turns: one :class:`TurnInjections` per user turn (empty list: no user turn yet).
        provider: the configured provider (``memory.provider`` as the home's Hermes reads it).
    """

    recorded: bool = True
    reason: str | None = None
    turns: tuple[TurnInjections, ...] = ()
    provider: str | None = None

    @property
    def injections(self) -> tuple[Injection, ...]:
        """Every part of every turn, oldest turn first."""
        return tuple(p for t in self.turns for p in t.parts)

    def quiet_turns(self) -> int | None:
        """How many of the newest user turns in a row carry no provider fence (None when nothing is
        recorded). With a provider configured, a long run means its recall never reaches the model."""
        if not self.recorded:
            return None
        n = 0
        for t in reversed(self.turns):
            if t.by("provider"):
                break
            n += 1
        return n

    def provider_tokens(self) -> int:
        """Hermes' estimate of every provider fence the active region still carries (tokens): each
        is replayed with its turn on every later request until a compaction drops the row."""
        return sum(p.tokens for p in self.injections if p.source == "provider")

    def to_list(self) -> list[dict[str, Any]] | None:
        """``context --json`` ``injected``: every part, or None when not recorded."""
        return [p.to_dict() for p in self.injections] if self.recorded else None


def _memlock_name(plugins: Sequence[str]) -> str:
    for name in MEMLOCK_PLUGINS:
        if name in plugins:
            return name
    return "memlock"


def _reminder_span(text: str) -> tuple[int, int] | None:
    """``[start, end)`` of MemLock's reminder block in ``text``: the marker at a line start, then
    every following line that starts with ``"  - "`` (:func:`memdeck.core.anchors.rehydration.reminder_block`)."""
    start = 0
    while True:
        i = text.find(REMINDER_MARKER, start)
        if i < 0:
            return None
        if i == 0 or text[i - 1] == "\n":
            break
        start = i + 1
    end = text.find("\n", i)
    if end < 0:
        return i, len(text)
    while end < len(text) and text.startswith("\n  - ", end):
        nxt = text.find("\n", end + 1)
        end = len(text) if nxt < 0 else nxt
    return i, end


def _trim(text: str) -> str:
    """A part as it was joined: without the blank-line separators around it."""
    return text.strip("\n")


def split_injection(tail: str, turn_id: int, *, provider: str | None, plugins: Sequence[str], line: str,
                    time: float | None = None) -> list[Injection]:
    """Attribute ``tail`` (everything appended after ``content + "\\n\\n"``) to its sources (module
    docstring). Returns the parts in order; ``[]`` for an empty tail."""
    out: list[Injection] = []

    def add(source: str, name: str, text: str, recalled: str | None = None) -> None:
        text = _trim(text)
        if text.strip():
            out.append(Injection(turn_id, source, name, text, len(text), hermes_estimate(text, line), recalled, time))

    rest = tail
    spans = fence_spans(rest)
    if spans and not rest[:spans[0][0]].strip():  # Hermes puts the provider's fence first
        a, b = spans[0]
        fence = rest[a:b]
        add("provider", provider or "memory provider (memory.provider not set now)", fence, fence_body(fence))
        rest = rest[b:]
    others = [p for p in plugins if p not in MEMLOCK_PLUGINS]
    other_name = (("plugin", others[0]) if len(others) == 1 else
                  ("unknown", "pre_llm_call context of " + ("an enabled plugin: " + ", ".join(others) if others
                                                             else "a plugin") + " or a gateway note"))
    span = _reminder_span(rest)
    if span is not None:
        add(*other_name, rest[:span[0]])
        add("memlock", _memlock_name(plugins), rest[span[0]:span[1]])
        rest = rest[span[1]:]
    add(*other_name, rest)
    return out


def _list_tail(content: str) -> str | None:
    """0.22's multimodal turn: the injection is the list's last text part when it opens with a
    fence or the reminder marker (else None)."""
    try:
        parts = json.loads(content[len(_JSON_PREFIX):])
    except ValueError:
        return None
    if not isinstance(parts, list) or len(parts) < 2:
        return None
    last = parts[-1]
    text = last.get("text") if isinstance(last, dict) and last.get("type") in ("text", "input_text") else None
    if isinstance(text, str) and (text.lstrip().lower().startswith("<memory-context") or
                                  text.lstrip().startswith(REMINDER_MARKER)):
        return text
    return None


def turn_injections(turn: Any, *, provider: str | None, plugins: Sequence[str], line: str) -> TurnInjections:
    """What was appended to one user turn (a :class:`memdeck.core.sessions.records.UserTurn`)."""
    content, api = turn.content, turn.api_content
    tail: str | None = None
    if api:
        if isinstance(content, str) and api.startswith(content):
            tail = api[len(content):]
            tail = tail[2:] if tail.startswith("\n\n") else tail
        else:  # the sidecar replaced the content (0.20+ interrupt scaffolding), not an append
            text = api
            return TurnInjections(turn.id, turn.timestamp, (Injection(
                turn.id, "unknown", "api_content replacing the stored content (Hermes' own scaffolding)", text,
                len(text), hermes_estimate(text, line), None, turn.timestamp),))
    elif isinstance(content, str) and content.startswith(_JSON_PREFIX):
        tail = _list_tail(content)
    if not tail:
        return TurnInjections(turn.id, turn.timestamp)
    return TurnInjections(turn.id, turn.timestamp, tuple(split_injection(
        tail, turn.id, provider=provider, plugins=plugins, line=line, time=turn.timestamp)))


def injected_view(turns: Sequence[Any] | None, *, provider: str | None, plugins: Sequence[str] = (),
                  line: str = "0.19") -> InjectedView:
    """The :class:`InjectedView` of a session's user turns.

    Args:
        turns: :meth:`memdeck.core.sessions.listing.SessionReader.user_turns` (None: this Hermes
            stores no ``api_content``).
        provider: ``memory.provider`` as the home's Hermes reads it (None: none configured).
        plugins: ``plugins.enabled`` of config.yaml (names the plugin parts).
        line: the Hermes line whose token estimator counts (:attr:`memdeck.core.hermes_version.HermesVersion.line`).
    """
    if turns is None:
        return InjectedView(False, NOT_STORED, (), provider)
    return InjectedView(True, None, tuple(turn_injections(t, provider=provider, plugins=plugins, line=line)
                                          for t in turns), provider)


__all__ = ["Injection", "InjectedView", "MEMLOCK_PLUGINS", "NOT_STORED", "SOURCES", "TurnInjections", "injected_view",
           "split_injection", "turn_injections"]
