"""MemLock's anchor rules: field access (``Anchor`` or MemLock dict), probes, reminders.

One concept: what an anchor's fields mean under MemLock's rules, shared by the model, the audit
and the plugin. Pure functions (no disk, no clock). Every rule cites its source in
``Sahil-SS9/hermes-memlock`` @ ``f6cfb8b`` (0.2.0); the later ``memlock_core`` package keeps
the same logic (``memlock_core/detection.py``, ``memlock_core/__init__.py``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ..coerce import as_int

#: The first line of every reminder block (MemLock ``__init__.py:57``; 38 chars, U+2014 dash).
REMINDER_MARKER = "[Standing instructions — still active]"
#: Reminder lines are cut to this many chars (MemLock ``_build_reminder_block``) and so is an
#: auto-derived reminder (``_do_pin``).
REMINDER_LINE_CHARS = 120
#: Chars each selected reminder costs against ``max_reminder_chars`` on top of its length
#: (``"  - "`` + newline; MemLock ``_select_casualties``).
REMINDER_LINE_OVERHEAD = 4
#: MemLock's probe stoplist (``_derive_probes``, ``__init__.py:461-476``): 20 words.
PROBE_STOPWORDS = frozenset(
    {
        "that", "this", "from", "with", "your", "will", "when", "they", "have", "been",
        "were", "their", "about", "would", "which", "there", "should", "could", "these", "those",
    }
)
#: Probe tokens: ASCII letters only, at least 4 of them, on word boundaries.
_PROBE_TOKEN_RE = re.compile(r"\b[a-zA-Z]{4,}\b")
#: At most this many probes are derived from a text.
MAX_DERIVED_PROBES = 5
#: The first sentence ends at ``.``, ``!`` or ``?`` followed by whitespace (``_do_pin``).
_SENTENCE_END_RE = re.compile(r"[.!?]\s+")
_WS_RE = re.compile(r"\s+")
#: MemLock keeps the last 20 drift-log events (``store.py:log_drift``).
DRIFT_LOG_CAP = 20


# ── anchor field access (Anchor objects or MemLock dicts) ──────────────────


def field_of(anchor: Any, key: str, default: Any = None) -> Any:
    """``anchor[key]`` for a MemLock dict, ``anchor.key`` for an ``Anchor``; ``default`` when absent."""
    if isinstance(anchor, Mapping):
        return anchor.get(key, default)
    return getattr(anchor, key, default)


def anchor_id_of(anchor: Any) -> str:
    """The anchor's id as a string (``""`` when it has none)."""
    value = field_of(anchor, "id")
    if value is None:
        value = field_of(anchor, "anchor_id", "")
    return str(value)


def probes_of(anchor: Any) -> list[str]:
    """The anchor's probes as a list of strings.

    A probes value that is a single string (a hand-edited file) counts as one probe; MemLock
    would iterate it character by character. ``None`` or a missing key gives ``[]``.
    """
    probes = field_of(anchor, "probes", None)
    if probes is None:
        return []
    if isinstance(probes, str):
        return [probes] if probes else []
    try:
        return [str(p) for p in probes]
    except TypeError:
        return []


def as_number(value: Any) -> float | None:
    """A finite number read from a hand-editable file (bools, strings, lists, NaN and infinities
    give None): MemLock's optional numeric fields (``integrity_score``, ``last_compaction_at``,
    ``last_alert_at``) are None or a number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value if math.isfinite(value) else None


def priority_of(anchor: Any) -> int:
    """The anchor's priority as an int (50 when missing or not a number)."""
    return as_int(field_of(anchor, "priority", 50), 50)


def reminder_of(anchor: Any) -> str:
    """The reminder MemLock would use: the ``reminder`` value if present, else ``text[:120]``.

    Matches MemLock ``_select_casualties``/``_build_reminder_block``
    (``anchor.get("reminder", anchor.get("text", "")[:120])``): an empty reminder stays empty.
    """
    value = field_of(anchor, "reminder", None)
    if value is None:
        return str(field_of(anchor, "text", "") or "")[:REMINDER_LINE_CHARS]
    return str(value)


def sort_key(anchor: Any) -> tuple[int, str]:
    """MemLock's anchor order: priority descending, then id ascending (``sorted_anchors``)."""
    return (-priority_of(anchor), anchor_id_of(anchor))


def sorted_anchors(anchors: Iterable[Any]) -> list[Any]:
    """``anchors`` in MemLock's order (:func:`sort_key`)."""
    return sorted(anchors, key=sort_key)


# ── text helpers ───────────────────────────────────────────────────────────


def flatten_ws(text: Any) -> str:
    """Replace every whitespace run with one space and strip (MemLock ``_do_pin``).

    Prevents a pinned text or reminder from spoofing extra ``  - `` lines or a second marker
    line inside the reminder block. ``None`` gives ``""``.
    """
    if text is None:
        return ""
    return _WS_RE.sub(" ", str(text)).strip()


def derive_probes(text: str) -> list[str]:
    """Auto-derive up to 5 probes from ``text`` (MemLock ``_derive_probes``, ``__init__.py:461-476``).

    Lowercase, tokens of >= 4 ASCII letters on word boundaries, minus the 20-word
    :data:`PROBE_STOPWORDS`, de-duplicated in order, first 5. Text made only of short or
    non-ASCII words gives ``[]`` (such an anchor is always alive in the keyword audit).

    Example: ``"Always reply in bullet points, never paragraphs."`` ->
    ``["always", "reply", "bullet", "points", "never"]``.
    """
    out: list[str] = []
    seen: set[str] = set()
    for token in _PROBE_TOKEN_RE.findall(str(text or "").lower()):
        if token in PROBE_STOPWORDS or token in seen:
            continue
        seen.add(token)
        out.append(token)
    return out[:MAX_DERIVED_PROBES]


def auto_reminder(text: str) -> str:
    """The automatic reminder of a pin: first sentence of ``text``, at most 120 chars.

    MemLock ``_do_pin``: split on ``[.!?]`` followed by whitespace, take the first part, cut
    to 120 chars. The text is whitespace-flattened first (as ``_do_pin`` does before).
    """
    flat = flatten_ws(text)
    return _SENTENCE_END_RE.split(flat, maxsplit=1)[0][:REMINDER_LINE_CHARS]



def memlock_cfg(config: Any) -> Any:
    """The ``memlock`` section of ``config`` (a ``Config``, a ``MemlockConfig``, or None -> defaults)."""
    if config is None:
        from ..config import MemlockConfig

        return MemlockConfig()
    return getattr(config, "memlock", config)

