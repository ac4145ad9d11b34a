"""What the next turn adds to the stored system prompt: the parts that are not in it.

One concept. Besides the system prompt (sized by :mod:`.sections`), Hermes' next request carries:

* the messages since the last compaction: the session's active rows, as Hermes reloads them
  (0.19 ``SessionDB.get_messages_as_conversation``) and sizes them
  (:func:`.tokens.hermes_message_estimate`);
* MemLock's reminder block, appended to the user turn when MemLock re-injects drifted anchors
  (``pre_llm_call`` returns ``{"context": block}``; memdeck builds it as MemLock would now,
  ``core/anchors/rehydration.py``);
* the ``<memory-context>`` fence of recalled memory a memory provider appends to the user turn
  (0.19 ``agent/memory_manager.py`` ``build_memory_context_block``): the last one the session's
  rows carry in ``api_content`` is shown as the size of the next one;
* the tool schemas, which Hermes never stores: "not recorded".

What providers and plugins appended turn by turn (read from ``messages.api_content``) is
:mod:`.injected`'s (the report's ``injected``).

Pure functions of values; nothing here reads the home.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..memory.context_fence import find_fences
from .tokens import hermes_estimate, hermes_message_estimate, message_size

#: What a stored row cannot tell.
NOT_RECORDED = "not recorded"


@dataclass(frozen=True)
class TurnPart:
    """One part of the next request that is not the system prompt.

    Attributes:
        name: ``messages``, ``reminder``, ``memory_context``, ``tool_schemas`` (or an injected
            part's name).
        title: what it is, in words.
        text: the text (None for ``messages`` and parts that are not recorded).
        chars: chars (None when not recorded).
        tokens: Hermes' estimate in tokens (None when not recorded).
        count: messages, for ``messages``.
        note: why it is empty or not recorded, or where it came from.
    """

    name: str
    title: str
    text: str | None
    chars: int | None
    tokens: int | None
    count: int | None = None
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "title": self.title, "chars": self.chars, "tokens": self.tokens}
        if self.count is not None:
            d["count"] = self.count
        if self.note:
            d["note"] = self.note
        return d


@dataclass(frozen=True)
class NextTurn:
    """The parts the next turn adds (see the module docstring).

    Attributes:
        messages, reminder, memory_context, tool_schemas: the parts.
    """

    messages: TurnPart
    reminder: TurnPart
    memory_context: TurnPart
    tool_schemas: TurnPart

    @property
    def parts(self) -> tuple[TurnPart, ...]:
        return (self.messages, self.reminder, self.memory_context, self.tool_schemas)

    def to_list(self) -> list[dict[str, Any]]:
        return [p.to_dict() for p in self.parts]


def last_fence(conversation: Sequence[Mapping[str, Any]]) -> str:
    """The last ``<memory-context>`` fence in the rows' ``api_content`` (newest row first), or ``""``."""
    for msg in reversed(conversation):
        api = msg.get("api_content")
        if msg.get("role") == "user" and isinstance(api, str) and "memory-context" in api.lower():
            found = find_fences(api)
            if found:
                return found[-1]
    return ""


def next_turn(conversation: Sequence[Mapping[str, Any]], reminder_block: str, line: str = "0.19",
              persisted: bool = False) -> NextTurn:
    """The parts the next turn adds.

    Args:
        conversation: the session's active rows as Hermes reloads them
            (:meth:`memdeck.core.sessions.listing.SessionReader.conversation`).
        reminder_block: the block MemLock would inject now (``""``: none).
        line: the Hermes line whose estimator counts (:attr:`memdeck.core.hermes_version.HermesVersion.line`).
        persisted: the rows carry Hermes' ``_db_persisted`` stamp when loaded (``HermesVersion.db_persisted``).
    """
    chars = sum(message_size(m, line, persisted)[0] for m in conversation)
    msgs = TurnPart("messages", "messages since the last compaction", None, chars,
                    hermes_message_estimate(conversation, line, persisted), count=len(conversation),
                    note=None if conversation else "no message since the last compaction")
    reminder = TurnPart("reminder", "MemLock's reminder block", reminder_block or None, len(reminder_block),
                        hermes_estimate(reminder_block, line),
                        note=None if reminder_block else "nothing to re-inject: no drifted anchor")
    fence = last_fence(conversation)
    memctx = TurnPart("memory_context", "the last <memory-context> fence", fence or None, len(fence),
                      hermes_estimate(fence, line),
                      note="the last one the session's rows hold; the next depends on the next message" if fence
                      else "no <memory-context> fence in the session's rows")
    tools = TurnPart("tool_schemas", "tool schemas", None, None, None,
                     note=f"{NOT_RECORDED}: Hermes sends them with every request but never stores them")
    return NextTurn(msgs, reminder, memctx, tools)


__all__ = ["NOT_RECORDED", "NextTurn", "TurnPart", "last_fence", "next_turn"]
