"""The memory entry format: parse, serialize, usage, ids, selection, and the refusals of a write.

One concept: what an entry is and how the text of MEMORY.md / USER.md maps to entries. Byte-
compatible with Hermes 0.19 ``tools/memory_tool.py``:

* format: entries joined by ``ENTRY_DELIMITER = "\\n§\\n"`` (:69), no header, no trailing
  newline; parsing splits on the delimiter, strips each piece, drops empties (``_read_file``
  :693-712) and de-duplicates keeping the first copy (:202-203, :315). Usage is ``len`` of the
  joined text (``_char_count`` :335-339). We read tolerantly (UTF-8 BOM, CRLF) and never write
  either.
* a non-canonical file (:func:`noncanonical_reason`, Hermes' ``_detect_external_drift`` :714-767): the
  file must round-trip and no entry may exceed the char limit.
* selectors (memdeck's rule): an entry id (8 hex of sha256 of the text), a unique id prefix
  (>= 4 hex), an exact whole entry, or a unique case-sensitive substring; an exact id or exact
  whole-entry match beats everything else (as newer Hermes main does); several distinct
  candidates -> ``Refused(code="ambiguous")`` listing them. :func:`hermes_match` is Hermes 0.19's
  pure substring rule (used to replay pending writes).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import Refused
from ..text import percent
from .threats import pattern_ids, scan, scan_ids, threat_message

ENTRY_DELIMITER = "\n§\n"
ID_LEN = 8
MIN_PREFIX = 4

# ---------------------------------------------------------------------------------------
# Format


def parse_entries(raw: str | None) -> list[str]:
    """Split file text into entries exactly as Hermes 0.19 does (split, strip, drop empty, dedupe).

    ``None`` or whitespace-only text gives ``[]``.
    """
    if raw is None or not raw.strip():
        return []
    pieces = (p.strip() for p in raw.split(ENTRY_DELIMITER))
    return list(dict.fromkeys(p for p in pieces if p))


def serialize_entries(entries: Sequence[str]) -> str:
    """The canonical file text: entries joined by ``"\\n§\\n"``; ``""`` for no entries."""
    return ENTRY_DELIMITER.join(entries) if entries else ""


def usage_chars(entries: Sequence[str]) -> int:
    """Hermes' usage: ``len`` of the joined entries (delimiters count), in chars."""
    return len(serialize_entries(entries))


def usage_pct(chars: int, limit: int) -> int:
    """Percent 0-100 as Hermes shows it: ``min(100, int(chars / limit * 100))`` (memdeck's one
    percent rule, :func:`memdeck.core.text.percent`, capped at 100 as Hermes' header is)."""
    return min(100, percent(chars, limit))


def noncanonical_reason(raw: str | None, limit: int) -> str | None:
    """Why this file is not canonical, so Hermes' drift guard would refuse to rewrite it, or None.

    (Named apart from an anchor's *drift*: here "drift" is Hermes' word for a memory file edited
    outside the memory tool; the refusal code and the ``drift`` JSON key keep Hermes' word.)

    Matches Hermes 0.19 ``_detect_external_drift`` (:714-767): the stripped text must equal the
    join of its stripped non-empty pieces (no dedupe here), and no piece may exceed ``limit``.
    """
    if raw is None or not raw.strip():
        return None
    pieces = [p.strip() for p in raw.split(ENTRY_DELIMITER) if p.strip()]
    if raw.strip() != ENTRY_DELIMITER.join(pieces):
        return "the file does not round-trip (extra blank lines or whitespace around § delimiters)"
    longest = max((len(p) for p in pieces), default=0)
    if longest > limit:
        return f"an entry is {longest:,} chars, longer than the whole {limit:,}-char limit (text added outside the memory tool?)"
    return None


def entry_id(text: str) -> str:
    """Stable id of an entry: the first 8 hex digits of sha256 of its UTF-8 text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:ID_LEN]


def archive_candidates(entries: Sequence[str], need: int) -> list[tuple[str, int, str]]:
    """Entries whose archiving frees at least ``need`` chars: the fewest, largest first.

    Each removal frees the entry's length plus its ``"\n§\n"`` delimiter (3 chars) while
    another entry remains. Returns ``[(entry id, chars, text)]``; all entries when even that
    is not enough; ``[]`` when ``need <= 0``.
    """
    if need <= 0:
        return []
    out: list[tuple[str, int, str]] = []
    freed = 0
    ordered = sorted((e for e in entries if e), key=len, reverse=True)
    for n, e in enumerate(ordered, 1):
        out.append((entry_id(e), len(e), e))
        freed += len(e) + (len(ENTRY_DELIMITER) if n < len(ordered) else 0)
        if freed >= need:
            break
    return out


@dataclass(frozen=True)
class Entry:
    """One entry. ``chars`` is ``len(text)``; ``threats`` are pattern ids (``core.threats``);
    ``scanned`` is False when the threat scan did not reach it (:data:`SCAN_BUDGET_CHARS`)."""

    id: str
    text: str
    chars: int
    threats: tuple[str, ...] = ()
    index: int = 0
    scanned: bool = True

    @classmethod
    def of(cls, text: str, index: int = 0, *, scan: bool = True) -> Entry:
        return cls(entry_id(text), text, len(text), scan_ids(text) if scan else (), index, scan)

    def to_dict(self) -> dict[str, Any]:
        d = {"id": self.id, "text": self.text, "chars": self.chars, "threats": list(self.threats)}
        if not self.scanned:
            d["scanned"] = False
        return d



#: The most entry text, in chars, one read threat-scans (about a hundred full MEMORY.md files).
#: A file far over its char limit (a 50 MB MEMORY.md) is read whole, but only its first entries
#: are scanned, and every entry past the budget says so (``Entry.scanned``): reading it never
#: takes tens of seconds (issue 13 #4).
SCAN_BUDGET_CHARS = 256 * 1024


def entries_of(texts: Sequence[str]) -> tuple[Entry, ...]:
    out, used = [], 0
    for i, t in enumerate(texts):
        used += len(t)
        out.append(Entry.of(t, i, scan=used <= SCAN_BUDGET_CHARS))
    return tuple(out)



# ---------------------------------------------------------------------------------------
# Selection


def preview(text: str, width: int = 80) -> str:
    return text[:width] + ("..." if len(text) > width else "")


def _candidates(entries: Sequence[str], idxs: Sequence[int]) -> list[dict[str, Any]]:
    return [{"id": entry_id(entries[i]), "preview": preview(entries[i]), "chars": len(entries[i])} for i in idxs]


def find_entry(entries: Sequence[str], selector: str, *, target: str = "") -> int:
    """Index of the entry ``selector`` designates (memdeck's selector rule, module docstring).

    Raises:
        Refused: ``empty`` (blank selector), ``no_match`` (with ``current_entries``),
            ``ambiguous`` (with ``candidates``: id, preview, chars).
    """
    sel = (selector or "").strip()
    if not sel:
        raise Refused("the entry selector is empty: give an id, an id prefix or part of the entry's text", code="empty")
    ids = [entry_id(e) for e in entries]
    low = sel.lower()
    hexlike = all(c in "0123456789abcdef" for c in low)
    if hexlike and len(low) == ID_LEN and low in ids:
        return ids.index(low)
    if sel in entries:
        return list(entries).index(sel)
    hits: list[int] = []
    if hexlike and len(low) >= MIN_PREFIX:
        hits.extend(i for i, eid in enumerate(ids) if eid.startswith(low))
    hits.extend(i for i, e in enumerate(entries) if sel in e and i not in hits)
    where = f" in {target}" if target else ""
    if not hits:
        raise Refused(f"no entry{where} matches {preview(sel, 60)!r} (by id, id prefix or text)", code="no_match",
                      current_entries=[e.to_dict() for e in entries_of(entries)])
    if len(hits) > 1:
        raise Refused(f"{len(hits)} entries{where} match {preview(sel, 60)!r}; give the id of the one you mean",
                      code="ambiguous", candidates=_candidates(entries, sorted(hits)))
    return hits[0]


def hermes_match(entries: Sequence[str], old_text: str) -> int | str:
    """Hermes 0.19 replace/remove matching: substring; identical duplicates -> first; else error text."""
    matches = [i for i, e in enumerate(entries) if old_text in e]
    if not matches:
        return f"no entry matched '{old_text}'."
    if len({entries[i] for i in matches}) > 1:
        return f"'{old_text}' matched multiple distinct entries -- be more specific."
    return matches[0]


# ---------------------------------------------------------------------------------------
# The refusals every write shares


def scan_or_refuse(text: str, what: str = "") -> None:
    findings = scan(text)
    if findings:
        msg = threat_message(findings) or "Blocked."
        raise Refused(f"{what}{msg}", code="threat", findings=[f.to_dict() for f in findings],
                      threats=pattern_ids(findings))


def overflow_refusal(target: str, entries: Sequence[str], new_total: int, limit: int, what: str) -> Refused:
    cur = usage_chars(entries)
    return Refused(
        f"{what} would put {target} at {new_total:,}/{limit:,} chars, over the limit. Nothing was dropped: "
        "archive, remove or shorten entries first.",
        code="overflow", current_entries=[e.to_dict() for e in entries_of(entries)], usage=f"{cur:,}/{limit:,}",
        would_be=new_total, limit=limit,
    )


__all__ = [
    "ENTRY_DELIMITER", "Entry", "SCAN_BUDGET_CHARS", "archive_candidates", "noncanonical_reason", "entries_of", "entry_id",
    "find_entry", "hermes_match", "overflow_refusal", "parse_entries", "preview", "scan_or_refuse",
    "serialize_entries", "usage_chars", "usage_pct",
]
