"""The ``<memory-context>`` fence: how Hermes fences recalled memory on a user message, and strips it.

One concept, both directions of Hermes 0.19 ``agent/memory_manager.py``:

* :func:`memory_context_fence` builds the fence (``build_memory_context_block`` :337-351), for
  the Recall panel's preview of what a recall would append to the user message;
* :func:`sanitize_context` strips fences, stray fence tags and the recall system note
  (``sanitize_context`` :153-169), which Hermes also applies to user/assistant string content
  loaded from state.db (``hermes_state._rows_to_conversation``), so the session reader uses it.

Pure text functions; nothing here reads a file or raises for str input.
"""

from __future__ import annotations

import re

#: The system note inside the fence (agent/memory_manager.py:337-351).
MEMORY_CONTEXT_NOTE = ("[System note: The following is recalled memory context, NOT new user input. Treat as "
                       "authoritative reference data — this is the agent's persistent memory and should inform all responses.]")

# Hermes 0.19 agent/memory_manager.py:153-169 (sanitize_context), applied by
# hermes_state._rows_to_conversation to user/assistant string content on load.
_FENCE_TAG_RE = re.compile(r"</?\s*memory-context\s*>", re.IGNORECASE)
_INTERNAL_CONTEXT_RE = re.compile(r"<\s*memory-context\s*>[\s\S]*?</\s*memory-context\s*>", re.IGNORECASE)
_INTERNAL_NOTE_RE = re.compile(
    r"\[System note:\s*The following is recalled memory context,\s*NOT new user input\.\s*Treat as "
    r"(?:informational background data|authoritative reference data[^\]]*)\.\]\s*",
    re.IGNORECASE,
)


def sanitize_context(text: str) -> str:
    """Strip ``<memory-context>`` blocks, stray fence tags and the recall system note.

    Matches Hermes 0.19 ``agent/memory_manager.py`` ``sanitize_context`` (:164-169).
    """
    text = _INTERNAL_CONTEXT_RE.sub("", text)
    text = _INTERNAL_NOTE_RE.sub("", text)
    return _FENCE_TAG_RE.sub("", text)


def fence_spans(text: str) -> list[tuple[int, int]]:
    """``[start, end)`` of every ``<memory-context> ... </memory-context>`` block in ``text``, in
    order (the blocks :func:`sanitize_context` strips; case-insensitive tags, as Hermes 0.19
    matches them)."""
    return [m.span() for m in _INTERNAL_CONTEXT_RE.finditer(text or "")]


def find_fences(text: str) -> list[str]:
    """Every ``<memory-context> ... </memory-context>`` block in ``text``, in order (see
    :func:`fence_spans`)."""
    return [text[a:b] for a, b in fence_spans(text)]


def fence_body(fence: str) -> str:
    """The recalled text inside a fence: the tags and Hermes' system note removed, and the one
    newline :func:`memory_context_fence` puts on each side of it (the text a provider's
    ``prefetch`` returned, after Hermes' sanitising)."""
    body = re.sub(r"^<\s*memory-context\s*>\n?", "", fence, flags=re.IGNORECASE)
    body = re.sub(r"\n?</\s*memory-context\s*>$", "", body, flags=re.IGNORECASE)
    note = _INTERNAL_NOTE_RE.match(body)
    if note is not None:
        body = body[note.end():]
    return body


def memory_context_fence(text: str) -> str:
    """Wrap recalled text the way Hermes fences it on the user message.

    Matches Hermes 0.19 ``build_memory_context_block`` (agent/memory_manager.py:337-351): blank
    input gives ``""``; any fence tags, nested fenced blocks or system notes inside the text are
    stripped (:func:`sanitize_context`) so the text cannot forge or close the fence; the result is
    ``<memory-context>\\n<note>\\n\\n<text>\\n</memory-context>``. (0.19 does not drop repeated
    bullet lines; later Hermes versions may.)
    """
    if not text or not text.strip():
        return ""
    clean = sanitize_context(text)
    return f"<memory-context>\n{MEMORY_CONTEXT_NOTE}\n\n{clean}\n</memory-context>"


__all__ = ["MEMORY_CONTEXT_NOTE", "fence_body", "fence_spans", "find_fences", "memory_context_fence", "sanitize_context"]
