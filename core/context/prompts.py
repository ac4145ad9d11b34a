"""Stored system prompts, read once per prompt and parsed once: a small cache keyed by the prompt.

One concept: a session's prompt is read from state.db only when its key
(:attr:`memdeck.core.sessions.records.PromptStamp.prompt_key`: Hermes' sha256 column from schema
23, else a digest of the prompt's length and ends) is one the cache does not hold, and its
MEMORY/USER blocks and sections are parsed once per prompt. A refresh of a live home that only
appended messages re-reads no prompt.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from .frozen import FrozenBlock, find_blocks
from .sections import PromptLayout, split_prompt

#: Prompts kept (a gateway home has one per open chat; each holds 10-40 KB of text).
MAX_PROMPTS = 64


@dataclass(frozen=True)
class ParsedPrompt:
    """One stored prompt and what was parsed from it.

    Attributes:
        key: the prompt's key; text: the prompt; sha256: hex digest of its UTF-8 bytes (Hermes'
            ``system_prompt_hash`` rule, 0.20 ``hermes_state.py:169-170``).
        blocks: its MEMORY / USER blocks.
    """

    key: str
    text: str
    sha256: str
    blocks: dict[str, FrozenBlock]
    _layouts: dict[tuple[str | None, bool], PromptLayout]

    def layout(self, soul: str | None, provider: bool) -> PromptLayout:
        """The prompt's sections (:func:`.sections.split_prompt`), computed once per ``(soul, provider)``."""
        k = (soul, provider)
        lay = self._layouts.get(k)
        if lay is None:
            lay = split_prompt(self.text, soul=soul, provider=provider, blocks=self.blocks)
            self._layouts[k] = lay
        return lay


def parse_prompt(key: str, text: str) -> ParsedPrompt:
    """Parse ``text`` (a stored prompt) once: its digest and its memory blocks."""
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return ParsedPrompt(key, text, digest, find_blocks(text), {})


class PromptCache:
    """Parsed prompts by key, the least recently used dropped past :data:`MAX_PROMPTS`. Thread-safe."""

    def __init__(self, size: int = MAX_PROMPTS) -> None:
        self._size = size
        self._items: OrderedDict[str, ParsedPrompt] = OrderedDict()
        self._lock = threading.Lock()
        #: prompts read from the database so far (a benchmark and test counter)
        self.reads = 0

    def get(self, key: str | None, session_id: str, db: Any) -> ParsedPrompt | None:
        """The parsed prompt of ``session_id`` whose key is ``key``: from the cache, else read with
        ``db.system_prompt(session_id)`` (:class:`memdeck.core.sessions.statedb.StateDB`) and
        parsed. None when ``key`` is None or no prompt is stored."""
        if key is None:
            return None
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
                return hit
        text = db.system_prompt(session_id)
        if not text:
            return None
        parsed = parse_prompt(key, text)
        with self._lock:
            self.reads += 1
            self._items[key] = parsed
            while len(self._items) > self._size:
                self._items.popitem(last=False)
        return parsed


__all__ = ["MAX_PROMPTS", "ParsedPrompt", "PromptCache", "parse_prompt"]
