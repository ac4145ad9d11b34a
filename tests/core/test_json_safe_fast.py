"""core/text.py ``json_safe``: the regex fast path gives byte-identical output to the former
per-character pass, and is fast on huge CLI output."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from memdeck.core.text import json_safe, marker_for


def _before(dumped: str) -> str:
    """The implementation before the fast path (core/text.py at 8a69c32), verbatim."""
    out = []
    for ch in dumped:
        cp = ord(ch)
        if cp >= 0x7F and marker_for(ch) is not None:
            if cp > 0xFFFF:
                cp -= 0x10000
                out.append(f"\\u{0xD800 + (cp >> 10):04x}\\u{0xDC00 + (cp & 0x3FF):04x}")
            else:
                out.append(f"\\u{cp:04x}")
        else:
            out.append(ch)
    return "".join(out)


HOSTILE = ["\x1b]52;c;Y3VybA==\x07", "\u202etxt.exe", "a\u200bb", "\x85\x9b31m", "\U000e0041tag", "\ud800lone",
           "\x7f", "\u3164", "caf\u00e9 \u65e5\u672c \U0001f600", "\u2028\u2029", "\ue000", "\U0010ffff", "plain"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(st.text(), st.sampled_from(HOSTILE),
                          st.text(alphabet=st.characters(min_codepoint=0x70, max_codepoint=0x3000)))))
def test_byte_identical_to_the_per_character_pass(parts: list[str]) -> None:
    s = "".join(parts)
    assert json_safe(s) == _before(s)
    dumped = json.dumps(parts, ensure_ascii=False)
    assert json_safe(dumped) == _before(dumped)
    assert json.loads(json_safe(dumped)) == parts


def test_every_hostile_sample_is_escaped_and_plain_ascii_is_untouched() -> None:
    for h in HOSTILE:
        assert json_safe(h) == _before(h)
    assert json_safe("\u202e") == "\\u202e" and json_safe("\U000e0041") == "\\udb40\\udc41"
    big = json.dumps(["plain ascii entry " * 10] * 1000)
    assert json_safe(big) is big


def test_huge_mostly_ascii_output_is_identical_to_the_per_character_pass() -> None:
    # the speed of this path is measured by bench/bench_bigfile.py, not asserted here (no timed tests)
    text = json.dumps(["an entry with caf\u00e9 and one \u202e hidden mark " * 4] * 20000, ensure_ascii=False)
    assert json_safe(text) == _before(text)
