"""The frozen system-prompt memory block: what a new Hermes session gets from MEMORY.md / USER.md.

One concept, reproduced from Hermes 0.19 ``tools/memory_tool.py`` so memdeck can preview it: the
entries as ``load_from_disk`` reads them (:func:`read_entries_as_hermes`), threat-matching
entries replaced by Hermes' ``[BLOCKED: ...]`` text (``_sanitize_entries_for_snapshot``
:218-251), each store rendered as a block (``_render_block`` :674-691) and the MEMORY and USER
blocks joined as ``agent/system_prompt.py:480-523`` does.

The entry format (delimiter, parsing, usage) is :mod:`.entries`'; the threat scan is
:mod:`.threats`. All read-only; nothing here raises for a bad or unreadable memory file.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ..config import Config
from ..fsio import read_regular_bytes
from ..home import TARGET_FILES
from .entries import ENTRY_DELIMITER, parse_entries, usage_chars, usage_pct
from .threats import scan_ids

#: Hermes 0.19 ``MEMORY_BLOCK_HEADERS`` (tools/memory_tool.py:64-67).
MEMORY_BLOCK_HEADERS = {"memory": "MEMORY (your personal notes)", "user": "USER PROFILE (who the user is)"}
#: The rule above and below a block's header (tools/memory_tool.py:674-691).
BLOCK_SEPARATOR = "═" * 46

#: The most entry text, in chars, a prompt-block preview renders (and threat-scans).
PREVIEW_BUDGET_CHARS = 256 * 1024


def _threat_ids(text: str) -> list[str]:
    """Pattern ids of the strict threat scan, first occurrence order, deduplicated.

    Uses :func:`.threats.scan_ids` (36 patterns + 17 invisible characters, Hermes 0.19
    ``tools/threat_patterns.py``). Hermes lists invisible-character ids in set order (varies
    between runs); we list them by code point, before the pattern ids, as Hermes does.
    """
    ids = scan_ids(text)
    inv = sorted((i for i in ids if i.startswith("invisible_unicode_")), key=lambda s: int(s.rsplit("+", 1)[-1], 16))
    return inv + [i for i in ids if not i.startswith("invisible_unicode_")]


def sanitize_entries_for_snapshot(entries: Iterable[str], filename: str) -> list[str]:
    """Replace each entry that the strict threat scan flags by Hermes' ``[BLOCKED: ...]`` text.

    Matches Hermes 0.19 ``MemoryStore._sanitize_entries_for_snapshot`` (tools/memory_tool.py
    :218-251): empty entries and entries already starting with ``[BLOCKED:`` pass through.
    """
    out: list[str] = []
    for entry in entries:
        if not entry or entry.startswith("[BLOCKED:"):
            out.append(entry)
            continue
        ids = _threat_ids(entry)
        if ids:
            out.append(f"[BLOCKED: {filename} entry contained threat pattern(s): {', '.join(ids)}. "
                       "Removed from system prompt; use memory(action=remove) to delete the original.]")
        else:
            out.append(entry)
    return out


def read_entries_as_hermes(path: Path) -> list[str]:
    """Entries of a memory file as Hermes 0.19 ``load_from_disk`` reads them.

    ``_read_file`` (:693-712): missing/unreadable/blank -> ``[]``; then :func:`.entries.parse_entries`
    (split on ``"\\n§\\n"``, strip, drop empties, exact duplicates removed keeping the first,
    :202-203). A different read rule from :mod:`.reader`'s, on purpose: 0.19 reads with
    ``Path.read_text(encoding="utf-8")``, so the text is decoded as plain UTF-8 without BOM
    stripping (a BOM stays in the first entry, counts in its usage and is blocked as an invisible
    character) and Python's universal newlines turn CRLF and CR into ``\n`` before the split;
    an undecodable file gives ``[]`` instead of an :class:`~memdeck.core.errors.UnreadableFile`
    refusal.
    """
    try:
        raw = read_regular_bytes(Path(path)).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    if "\r" in raw:
        raw = raw.replace("\r\n", "\n").replace("\r", "\n")  # universal newlines, as read_text
    return parse_entries(raw)


def render_block(target: str, entries: Sequence[str], char_limit: int) -> str:
    """Hermes ``_render_block``: ``""`` for no entries, else separator, header, separator, content.

    Header: ``<MEMORY_BLOCK_HEADERS[target]> [<pct>% — <cur:,>/<limit:,> chars]`` with ``cur``
    the usage in chars (:func:`.entries.usage_chars`: ``len("\\n§\\n".join(entries))``) and
    ``pct`` Hermes' percent (:func:`.entries.usage_pct`: ``min(100, int(cur / limit * 100))``).
    """
    if not entries:
        return ""
    content = ENTRY_DELIMITER.join(entries)
    current = usage_chars(entries)
    key = "user" if target == "user" else "memory"
    header = f"{MEMORY_BLOCK_HEADERS[key]} [{usage_pct(current, char_limit)}% — {current:,}/{char_limit:,} chars]"
    return f"{BLOCK_SEPARATOR}\n{header}\n{BLOCK_SEPARATOR}\n{content}"


def _home_file(home: Any, target: str) -> Path:
    if hasattr(home, "memory_file"):
        return home.memory_file(target)
    return Path(home) / "memories" / TARGET_FILES[target]


def render_memory_block(home: Any, config: Config | None, target: str) -> str:
    """The frozen block Hermes would put in a new session's system prompt for ``target``.

    Reads the current ``MEMORY.md``/``USER.md`` like ``load_from_disk``, blocks threat-matching
    entries, renders with the configured char limit (``config`` None: the defaults of
    :class:`~memdeck.core.config.Config`, 2,200 / 1,375 chars). ``""`` when the file has no
    entries (Hermes then omits the block). A file whose entries exceed
    :data:`PREVIEW_BUDGET_CHARS` is shown up to that bound and the block's last line says how
    many entries are not shown. Never raises for a bad file.

    Args:
        home: a :class:`~memdeck.core.home.HermesHome`, or the home directory as a path.

    Raises:
        ValueError: ``target`` is not ``"memory"`` or ``"user"``.
    """
    if target not in TARGET_FILES:
        raise ValueError(f"invalid target {target!r}: use 'memory' or 'user'")
    entries = read_entries_as_hermes(_home_file(home, target))
    limit = (config if config is not None else Config()).char_limit(target)
    # A file far over its limit (issue 13 #4) is shown up to a bound, said in the block's last
    # line; the threat scan of a 50 MB file would take a minute on every refresh.
    shown: list[str] = []
    used = 0
    for e in entries:
        used += len(e)
        if used > PREVIEW_BUDGET_CHARS and shown:
            break
        shown.append(e)
    block = render_block(target, sanitize_entries_for_snapshot(shown, TARGET_FILES[target]), limit)
    if len(shown) < len(entries):
        block += (f"\n[memdeck: {len(entries) - len(shown):,} more entries not shown; the file is far over "
                  f"its {limit:,}-char limit]")
    return block


def render_prompt_blocks(home: Any, config: Config | None) -> str:
    """MEMORY then USER blocks as they sit in the system prompt's volatile tier.

    Each block is included when its store is enabled (``memory.memory_enabled``,
    ``memory.user_profile_enabled``; both when ``config`` is None) and non-empty; blocks are
    stripped and joined with a blank line (``agent/system_prompt.py:480-523``). ``""`` when
    neither applies.
    """
    parts = []
    if config is None or config.memory_enabled:
        parts.append(render_memory_block(home, config, "memory"))
    if config is None or config.user_profile_enabled:
        parts.append(render_memory_block(home, config, "user"))
    return "\n\n".join(p.strip() for p in parts if p and p.strip())


__all__ = [
    "BLOCK_SEPARATOR", "MEMORY_BLOCK_HEADERS", "PREVIEW_BUDGET_CHARS", "read_entries_as_hermes", "render_block",
    "render_memory_block", "render_prompt_blocks", "sanitize_entries_for_snapshot",
]
