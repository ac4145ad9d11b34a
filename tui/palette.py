"""The ANSI palette memdeck's light theme draws status colours with.

Panels colour states with the ANSI names (green alive, yellow warning, red drifted or over the
floor, cyan headings). Textual maps those names through ``App.ansi_theme_light`` on a light
theme; its default (Alabaster) puts yellow at 2.1:1 and bright green at 1.9:1 against the light
background (#E0E0E0). This palette keeps every hue and darkens it until each of the eight
colours and their bright forms reads at 3:1 or better (WCAG's minimum for large or bold text
and UI components). The dark theme keeps Textual's default.
"""

from __future__ import annotations

from rich.terminal_theme import TerminalTheme

#: Textual's ``textual-light`` background, which the contrast is measured against.
LIGHT_BACKGROUND = (0xE0, 0xE0, 0xE0)

LIGHT_ANSI = TerminalTheme(
    (0xE0, 0xE0, 0xE0),
    (0x00, 0x00, 0x00),
    [  # black, red, green, yellow, blue, magenta, cyan, white
        (0, 0, 0), (170, 40, 35), (40, 110, 20), (125, 85, 0),
        (40, 75, 170), (115, 50, 150), (0, 100, 135), (90, 90, 90),
    ],
    [  # the bright forms
        (60, 60, 60), (180, 45, 45), (45, 115, 0), (130, 90, 0),
        (0, 90, 170), (150, 45, 150), (0, 105, 130), (70, 70, 70),
    ],
)


def contrast(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    """WCAG 2 contrast ratio of two sRGB colours (1.0 to 21.0)."""

    def lum(c: tuple[int, int, int]) -> float:
        def ch(v: int) -> float:
            s = v / 255
            return s / 12.92 if s <= 0.03928 else ((s + 0.055) / 1.055) ** 2.4

        r, g, bl = (ch(v) for v in c)
        return 0.2126 * r + 0.7152 * g + 0.0722 * bl

    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)
