"""The CLI's escape paths (``text.visible``, ``memory_cmds.safe``) find what to change with one
regex scan (issue 13 #4: `status` on a 50 MB file spent seconds escaping character by
character). The output must be identical to the per-character definition, kept here as the oracle."""

from __future__ import annotations

import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from memdeck.core.cli.memory_cmds import safe
from memdeck.core.memory.threats import INVISIBLE_CHARS
from memdeck.core.text import marker_for, visible


def _visible_oracle(text: str, width: int = 0, single_line: bool = True) -> str:
    out = []
    for ch in text:
        if ch == "\n":
            out.append("⏎" if single_line else "\n")
            continue
        out.append(marker_for(ch) or ch)
    s = "".join(out)
    return s if not width or len(s) <= width else s[: width - 1] + "…"


def _safe_oracle(text: str, one_line: bool = False, width: int | None = None) -> str:
    out = []
    for ch in text:
        if ch == "\n":
            out.append(" ⏎ " if one_line else "\n")
        elif ch == "\t":
            out.append("\t")
        elif ch in INVISIBLE_CHARS or unicodedata.category(ch) in {"Cc", "Cf", "Zl", "Zp"}:
            out.append(f"<U+{ord(ch):04X}>")
        else:
            out.append(ch)
    s = "".join(out)
    return s[: width - 1] + "…" if width is not None and len(s) > width else s


HOSTILE = ["\x1b]52;c;ZXZpbA==\x07", "a\u202eb\u200bc\ufeff", "\x85\x9b31m", "\u2028\u2029", "\U000e0041\U0010ffff",
           "\ud800 lone", "tab\there\nline", "\u3164\u2800\u115f", "plain ascii only"]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=80), st.booleans(),
       st.integers(min_value=0, max_value=40))
def test_visible_is_the_per_character_definition(text: str, single_line: bool, width: int) -> None:
    assert visible(text, width, single_line=single_line) == _visible_oracle(text, width, single_line)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80), st.booleans())
def test_safe_is_the_per_character_definition(text: str, one_line: bool) -> None:
    assert safe(text, one_line=one_line) == _safe_oracle(text, one_line)
    assert safe(text, one_line=one_line, width=30) == _safe_oracle(text, one_line, 30)


def test_hostile_samples() -> None:
    for h in HOSTILE:
        for sl in (True, False):
            assert visible(h, single_line=sl) == _visible_oracle(h, single_line=sl)
            assert safe(h, one_line=sl) == _safe_oracle(h, one_line=sl)
    assert "\x1b" not in visible(HOSTILE[0]) and "⟨ESC⟩" in visible(HOSTILE[0])
