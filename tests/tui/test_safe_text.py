"""The one helper every piece of data text goes through renders it literally."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from memdeck.tui.safe_text import has_hidden, marker_for, safe_plain, safe_text

HERMES_INVISIBLE = [
    "\u200b", "\u200c", "\u200d", "\u2060", "\u2062", "\u2063", "\u2064", "\ufeff",
    "\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069",
]


def test_markup_is_kept_as_characters() -> None:
    t = safe_text("[bold red]x[/] [link=https://evil.example]click[/link]")
    assert t.plain == "[bold red]x[/] [link=https://evil.example]click[/link]"
    assert t.spans == []


def test_ansi_and_osc_sequences_become_markers() -> None:
    raw = "\x1b[31mred\x1b[0m \x1b]8;;https://evil.example\x07link\x1b]8;;\x07 \x9b2J"
    out = safe_plain(raw)
    assert "\x1b" not in out and "\x07" not in out and "\x9b" not in out
    assert out == "⟨ESC⟩[31mred⟨ESC⟩[0m ⟨ESC⟩]8;;https://evil.example⟨BEL⟩link⟨ESC⟩]8;;⟨BEL⟩ ⟨U+009B⟩2J"


def test_every_hermes_invisible_char_gets_a_marker() -> None:
    for ch in HERMES_INVISIBLE:
        assert marker_for(ch) == f"⟨U+{ord(ch):04X}⟩"
        assert has_hidden(f"a{ch}b")


def test_bidi_override_cannot_reorder_the_line() -> None:
    out = safe_plain("user\u202etxt.exe")
    assert out == "user⟨U+202E⟩txt.exe"


def test_controls_newlines_and_tabs() -> None:
    assert safe_plain("a\x00b\x7fc\td\re") == "a⟨NUL⟩b⟨DEL⟩c⟨TAB⟩d⟨CR⟩e"
    assert safe_plain("one\ntwo") == "one\ntwo"
    assert safe_plain("one\ntwo", single_line=True) == "one⏎two"


def test_plain_text_passes_through_unchanged() -> None:
    s = "Prefers British English — colour, naïve, 日本語, emoji 🙂, § sign"
    assert safe_plain(s) == s
    assert not has_hidden(s)


def test_highlight_offsets_survive_markers() -> None:
    src = "\x1b[31m cat ~/.hermes/.env"
    start = src.index("cat")
    t = safe_text(src, highlights=[(start, len(src))])
    span = [s for s in t.spans if "red" in str(s.style) or "bold" in str(s.style)][-1]
    assert t.plain[span.start:span.end] == "cat ~/.hermes/.env"


def test_max_chars_cuts_the_source_and_marks_it() -> None:
    t = safe_text("abcdef", max_chars=3)
    assert t.plain == "abc…"


def test_rendered_output_carries_no_escape_from_the_data() -> None:
    console = Console(width=80, color_system=None, force_terminal=False)
    with console.capture() as cap:
        console.print(safe_text("\x1b]0;pwned\x07\x1b[2J[bold]hi[/bold]"))
    out = cap.get()
    assert "\x1b" not in out and "\x07" not in out
    assert "[bold]hi[/bold]" in out


@given(st.text())
def test_output_never_contains_a_control_or_format_char(s: str) -> None:
    plain = safe_plain(s)
    assert not has_hidden(plain)
    for ch in plain:
        assert ch == "\n" or ord(ch) >= 0x20
