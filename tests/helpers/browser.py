"""A real headless Chromium (Debian's ``chromium``) driven by Playwright for Python, for the
``memdeck serve`` tests and the browser screenshot. Playwright never downloads a browser here: it
launches ``/usr/bin/chromium`` (``executable_path``) with a fresh profile directory.

Reading the dashboard in the page: xterm.js draws the terminal on a canvas, so there is no text in
the DOM. The page's init script catches textual.js's terminal object as it is built (the
constructor assigns ``websocket_url`` on it; a one-shot setter on ``Object.prototype`` keeps
``this``) and :func:`screen_text` reads xterm.js's own buffer (``terminal.buffer.active``), which
holds exactly the characters on the screen.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CHROMIUM = os.environ.get("MEMDECK_CHROMIUM", "/usr/bin/chromium")

#: Chromium's flags: headless as root in a container, nothing fetched from the network.
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-default-apps", "--disable-extensions", "--metrics-recording-only", "--mute-audio",
]

INIT_SCRIPT = """
(() => {
  Object.defineProperty(Object.prototype, 'websocket_url', {
    configurable: true,
    set(value) {
      window.__deck = this;  // textual.js's terminal holder: .terminal is the xterm.js Terminal
      Object.defineProperty(this, 'websocket_url', {value, writable: true, configurable: true, enumerable: true});
    },
  });
  window.__deckText = () => {
    const deck = window.__deck;
    if (!deck || !deck.terminal) return '';
    const buffer = deck.terminal.buffer.active;
    const lines = [];
    for (let y = 0; y < buffer.length; y++) {
      const line = buffer.getLine(y);
      if (line) lines.push(line.translateToString(true));
    }
    return lines.join('\\n');
  };
})();
"""


def unavailable_reason() -> str | None:
    """Why the browser tests cannot run here (``None`` when they can)."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -e '.[test]')"
    if not (Path(CHROMIUM).is_file() and os.access(CHROMIUM, os.X_OK)):
        found = shutil.which("chromium")
        return (f"no Chromium at {CHROMIUM}{f' (found {found}: set MEMDECK_CHROMIUM)' if found else ''}; "
                "install Debian's chromium package (.ci/run does: apt-get install chromium chromium-driver)")
    return None


@contextlib.contextmanager
def chromium(profile_dir: Path, *, width: int = 1400, height: int = 900) -> Iterator[Any]:
    """A Playwright ``BrowserContext`` of a fresh headless Chromium (profile in ``profile_dir``),
    with :data:`INIT_SCRIPT` in every page; closed after."""
    from playwright.sync_api import sync_playwright

    profile_dir.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            str(profile_dir), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
            viewport={"width": width, "height": height}, device_scale_factor=1,
        )
        try:
            ctx.add_init_script(INIT_SCRIPT)
            yield ctx
        finally:
            ctx.close()


def screen_text(page: Any) -> str:
    """The characters on the page's terminal screen, one line per row (trailing blanks cut)."""
    return page.evaluate("() => window.__deckText()")


def wait_for_text(page: Any, needle: str, *, timeout_ms: float = 60_000) -> None:
    """Wait until ``needle`` is on the terminal screen (checked on every animation frame);
    Playwright's ``TimeoutError`` after ``timeout_ms``."""
    page.wait_for_function("(needle) => window.__deckText().includes(needle)", arg=needle, timeout=timeout_ms)


def press(page: Any, key: str) -> None:
    """Type ``key`` into the terminal (xterm.js listens on its hidden textarea)."""
    page.focus(".xterm-helper-textarea")
    page.keyboard.press(key)
