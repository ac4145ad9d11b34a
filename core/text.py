"""Text memdeck did not write, made safe for a terminal and for JSON consumers.

Memory entries, anchor and session ids, pending-write origins and file names are data; a
terminal would act on the control characters they may hold (an OSC 52 sequence sets the
clipboard, OSC 0 the window title, CSI moves the cursor) or hide the bidirectional and invisible
ones. :func:`marker_for` names the visible marker that stands for such a character (the TUI's
``safe_text`` and the CLI's :func:`visible` both use it); :func:`json_safe` turns the same
characters into ``\\uXXXX`` escapes in JSON text (``json.dumps(ensure_ascii=False)`` leaves
C1 controls and bidi overrides raw).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable

_C0_NAMES = {
    0x00: "NUL", 0x07: "BEL", 0x08: "BS", 0x09: "TAB", 0x0B: "VT", 0x0C: "FF", 0x0D: "CR",
    0x1B: "ESC", 0x7F: "DEL",
}
#: Letters that render as blank space in most fonts (used to hide text).
_BLANK_LETTERS = frozenset({0x115F, 0x1160, 0x3164, 0xFFA0, 0x2800, 0x180E, 0x034F})
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def marker_for(ch: str) -> str | None:
    """The visible marker for one character (``⟨ESC⟩``, ``⟨U+202E⟩``...), or None when it is
    shown as itself. ``"\\n"`` returns None (callers decide how to show line breaks).

    Hidden: C0 controls, DEL, C1 controls, Unicode categories Cf/Cs/Co/Cn/Zl/Zp (zero-width and
    bidi format characters, tag characters, lone surrogates, private use, unassigned, line and
    paragraph separators) and letters that render blank; this covers the 17 invisible
    characters of Hermes 0.19 ``tools/threat_patterns.py:141-159``.
    """
    cp = ord(ch)
    if ch == "\n":
        return None
    if cp < 0x20 or cp == 0x7F:
        name = _C0_NAMES.get(cp)
        return f"⟨{name}⟩" if name else f"⟨U+{cp:04X}⟩"
    if cp < 0x7F:
        return None
    if cp in _BLANK_LETTERS or unicodedata.category(ch) in _HIDDEN_CATEGORIES:
        return f"⟨U+{cp:04X}⟩"
    return None


def visible(text: object, width: int = 0, *, single_line: bool = True) -> str:
    """``text`` with every hidden character as its marker (newlines as ``⏎`` when
    ``single_line``), cut to ``width`` chars with ``…`` when ``width`` > 0.

    Linear and fast on huge output: one regex scan (:func:`hidden_pattern`) finds the
    characters that may change; only those take the per-character path."""
    if text is None:
        return ""

    s = str(text)
    # ASCII text can hide only C0 controls and DEL; other text is looked at once per distinct
    # character (``set`` runs in C), not through the whole-Unicode pattern (built on first use
    # from 65k code points: tens of ms of every CLI process that prints)
    pattern = _ASCII_HIDDEN if s.isascii() else _pattern_of(c for c in set(s) if marker_for(c) is not None)
    if pattern is not None:
        s = pattern.sub(lambda m: marker_for(m.group()) or m.group(), s)
    if single_line:
        s = s.replace("\n", "⏎")  # no marker holds a newline
    return s if not width or len(s) <= width else s[: width - 1] + "…"


def _pattern_of(chars: Iterable[str]) -> re.Pattern[str] | None:
    """A character class of ``chars`` (None when there are none)."""
    body = "".join(re.escape(c) for c in sorted(chars))
    return re.compile("[" + body + "]") if body else None


#: What :func:`marker_for` may hide in ASCII text (C0 controls but the newline, DEL).
_ASCII_HIDDEN = re.compile("[\\x00-\\x09\\x0b-\\x1f\\x7f]")


@functools.lru_cache(maxsize=8)
def hidden_pattern(extra: str = "", newline: bool = True) -> re.Pattern[str]:
    """A pattern matching every character :func:`marker_for` may hide -- C0 controls (tab
    included, newline unless ``newline`` is False: callers decide), DEL and above as
    :func:`_needs_escape` -- plus the characters of ``extra``. A superset: a match is judged
    one character at a time, a non-match is always shown as itself."""
    body = _needs_escape().pattern[1:-1]
    c0 = "\\x00-\\x1f" if newline else "\\x00-\\x09\\x0b-\\x1f"
    return re.compile("[" + c0 + "".join(re.escape(c) for c in extra) + body + "]")


@functools.lru_cache(maxsize=4096)
def _json_escape_char(ch: str) -> str:
    cp = ord(ch)
    if cp >= 0x7F and marker_for(ch) is not None:
        if cp > 0xFFFF:
            cp -= 0x10000
            return f"\\u{0xD800 + (cp >> 10):04x}\\u{0xDC00 + (cp & 0x3FF):04x}"
        return f"\\u{cp:04x}"
    return ch


@functools.lru_cache(maxsize=1)
def _needs_escape() -> re.Pattern[str]:
    """A pattern matching every BMP character :func:`marker_for` hides (DEL and above; C0
    controls are escaped by ``json.dumps`` itself) and every character above U+FFFF (judged
    one by one). Built on first use by :func:`marker_for`'s rule above DEL (DEL, blank
    letters, hidden categories), the 65k categories read by ``map`` (C speed: ~10 ms, where
    a ``marker_for`` call per code point took ~0.1 s of every CLI process printing non-ASCII
    JSON); tests/core/test_cli_lazy.py checks it against ``marker_for``."""
    cats = list(map(unicodedata.category, map(chr, range(0x80, 0x10000))))
    hidden = [True] + [c in _HIDDEN_CATEGORIES for c in cats]  # index 0: DEL (0x7F)
    for cp in _BLANK_LETTERS:
        hidden[cp - 0x7F] = True
    parts, start = [], None
    for i, h in enumerate(hidden + [False]):
        if h and start is None:
            start = i + 0x7F
        elif not h and start is not None:
            parts.append(f"\\U{start:08x}-\\U{i + 0x7F - 1:08x}")
            start = None
    return re.compile("[" + "".join(parts) + "\\U00010000-\\U0010ffff]")


def json_safe(dumped: str) -> str:
    """JSON text (from ``json.dumps(..., ensure_ascii=False)``) with every hidden character
    escaped as ``\\uXXXX`` (a surrogate pair above U+FFFF). Valid JSON stays valid and decodes
    to the same value; only what a terminal would act on or hide is escaped.

    Fast on huge CLI output: pure-ASCII text (below DEL) is returned as is; otherwise one regex
    scan (C speed) finds the characters that may need escaping and only those take the
    per-character path.
    """
    if dumped.isascii() and "\x7f" not in dumped:
        return dumped
    # the distinct characters at DEL and above that marker_for hides (``set`` runs in C): the
    # same escapes as the whole-Unicode pattern (:func:`_needs_escape`), without building it
    pattern = _pattern_of(c for c in set(dumped) if ord(c) >= 0x7F and marker_for(c) is not None)
    return dumped if pattern is None else pattern.sub(lambda m: _json_escape_char(m.group()), dumped)


def age_words(seconds: float | None) -> str:
    """An age in words: ``"now"`` (under a minute), ``"12 min"``, ``"5 h"`` (under two days), ``"3 d"``
    (whole units, rounded down), ``"?"`` when unknown. The one age formatter of the CLI, the fleet and
    the dashboard. ``seconds``: the age in seconds (negative counts as now)."""
    if seconds is None:
        return "?"
    if seconds < 60:
        return "now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min"
    if seconds < 48 * 3600:
        return f"{int(seconds // 3600)} h"
    return f"{int(seconds // 86400)} d"


def percent(part: float, whole: float) -> int:
    """``part`` as a percent of ``whole``, the one rule memdeck shows a percent by: Hermes' own
    ``int(part / whole * 100)`` (``tools/memory_tool.py`` and the prompt block's header: truncated
    toward zero, a whole number), past 100 when ``part`` exceeds ``whole`` (a write that would
    overflow says 102%, never 100%); 0 when ``whole`` is not positive. Hermes' usage header caps
    it at 100 (:func:`memdeck.core.memory.entries.usage_pct`)."""
    return int((part / whole) * 100) if whole > 0 else 0


def percent_text(part: float, whole: float) -> str:
    """:func:`percent` as text: ``"88%"`` (a whole number, no space), as every panel, dialog and
    CLI line writes it."""
    return f"{percent(part, whole)}%"
