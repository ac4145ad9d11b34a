"""The one way memdeck shows text it did not write: literally, with hidden characters made visible.

Memory entries, anchors, session messages and pending writes are *data*. Everything taken from
them and put on screen goes through :func:`safe_text`, which builds a :class:`rich.text.Text`
by appending plain strings (never ``Text.from_markup``), so ``[bold]`` or ``[link=...]`` in an
entry is shown as those characters. Characters a terminal would act on or hide are replaced by
visible markers:

* C0 controls, DEL and C1 controls: ``⟨ESC⟩``, ``⟨BEL⟩``, ``⟨NUL⟩``, ``⟨DEL⟩``, ``⟨U+009B⟩``...
  An ANSI CSI sequence ``ESC [ 3 1 m`` is therefore shown as ``⟨ESC⟩[31m`` and an OSC 8
  hyperlink ``ESC ] 8 ; ; url BEL`` as ``⟨ESC⟩]8;;url⟨BEL⟩``: nothing is interpreted.
* invisible and bidirectional format characters (Unicode category ``Cf``: zero-width space and
  joiners, BOM, word joiner, invisible operators, LRE/RLE/PDF/LRO/RLO, LRI/RLI/FSI/PDI, tag
  characters, soft hyphen ...), line/paragraph separators (``Zl``/``Zp``), lone surrogates
  (``Cs``), private-use and unassigned code points, and a few blank-looking letters (Hangul
  fillers, braille blank): ``⟨U+202E⟩``.  This covers the 17 ``INVISIBLE_CHARS`` of Hermes 0.19
  ``tools/threat_patterns.py:141-159``.

Newlines are kept (or shown as ``⏎`` with ``single_line=True``); a tab is shown as ``⟨TAB⟩``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.style import Style
from rich.text import Text

from memdeck.core.text import marker_for  # the one marker table, shared with the CLI

#: Style of a marker that stands for a hidden character.
MARKER_STYLE = Style(reverse=True)
#: Style of a highlighted span (threat finding, recall match) when none is given.
HIGHLIGHT_STYLE = Style(bold=True, reverse=True, color="red")


def has_hidden(text: str) -> bool:
    """True when ``text`` holds any character :func:`safe_text` would replace by a marker."""
    return any(marker_for(ch) is not None for ch in text)


def safe_plain(text: str, *, single_line: bool = False) -> str:
    """The same rendering as :func:`safe_text`, as a plain ``str`` (no styles)."""
    return safe_text(text, single_line=single_line).plain


def safe_text(
    text: object,
    *,
    single_line: bool = False,
    max_chars: int | None = None,
    style: str | Style = "",
    highlights: Iterable[tuple[int, int]] | Sequence[tuple[int, int, str | Style]] = (),
    highlight_style: str | Style = HIGHLIGHT_STYLE,
) -> Text:
    """Render untrusted ``text`` literally as a :class:`rich.text.Text`.

    Args:
        text: the data to show (``None`` gives an empty Text; other objects use ``str()``).
        single_line: show ``\\n`` as ``⏎`` so the result is one line (table cells).
        max_chars: cut the *source* text to this many chars and add ``…`` (``None``: no cut).
        style: base style of the literal characters.
        highlights: ``(start, end)`` or ``(start, end, style)`` char offsets into the *source*
            text (e.g. ``core.threats.Finding.start/end``) to highlight; offsets stay right
            even where markers replaced characters.
        highlight_style: the style of a highlight given without its own style.

    Returns:
        a Text whose ``plain`` is the literal text with markers; it never contains markup
        spans derived from the data and never a control character except ``\\n``.
    """
    if text is None:
        src = ""
    elif isinstance(text, str):
        src = text
    else:
        src = str(text)
    cut = max_chars is not None and max_chars >= 0 and len(src) > max_chars
    if cut:
        src = src[: max_chars]  # type: ignore[misc]
    out = Text(style=style, no_wrap=False, end="")
    # offsets[i] = output offset where source char i starts; offsets[len] = end.
    offsets: list[int] = []
    pos = 0
    run_start = 0

    def flush(upto: int) -> None:
        nonlocal run_start
        if upto > run_start:
            out.append(src[run_start:upto])
        run_start = upto

    for i, ch in enumerate(src):
        offsets.append(pos)
        if ch == "\n":
            if single_line:
                flush(i)
                out.append("⏎", MARKER_STYLE)
                run_start = i + 1
            pos += 1
            continue
        marker = marker_for(ch)
        if marker is None:
            pos += 1
            continue
        flush(i)
        out.append(marker, MARKER_STYLE)
        run_start = i + 1
        pos += len(marker)
    flush(len(src))
    offsets.append(pos)
    if cut:
        out.append("…", "dim")
    n = len(src)
    for hl in highlights:
        start, end = int(hl[0]), int(hl[1])
        hstyle = hl[2] if len(hl) > 2 else highlight_style  # type: ignore[misc]
        start = max(0, min(start, n))
        end = max(start, min(end, n))
        if end > start:
            out.stylize(hstyle, offsets[start], offsets[end])
    return out


def safe_lines(text: str, *, max_lines: int, single_line_width: int | None = None) -> Text:
    """The first ``max_lines`` lines of ``text`` rendered safely, with ``…`` when cut."""
    lines = text.split("\n")
    shown = "\n".join(lines[:max_lines])
    t = safe_text(shown, max_chars=single_line_width)
    if len(lines) > max_lines:
        t.append("\n…", "dim")
    return t
