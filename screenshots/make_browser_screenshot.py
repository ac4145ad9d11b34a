"""Regenerate ``screenshots/serve-chromium.png``: ``memdeck serve`` on the demo home, in a real
headless Chromium (Debian's ``chromium``, driven by Playwright; never a downloaded browser).

    python screenshots/make_browser_screenshot.py [--out FILE] [--panel KEY]

The demo home (seed 7, ``memdeck.core.demo.DEMO_NOW``) is built where make_screenshots.py builds
it; the server runs as a user runs it (``memdeck --home=... serve --port 0``), the page is opened
with the printed URL, the panel key is pressed, and the page is saved once the panel is drawn.
The clock in the status line is the time of the run.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from memdeck.core.demo import DEMO_NOW, DEMO_SEED, build_demo_home  # noqa: E402
from tests.helpers.browser import chromium, press, unavailable_reason, wait_for_text  # noqa: E402
from tests.helpers.serve import served  # noqa: E402

DEMO_PATH = Path(tempfile.gettempdir()) / "memdeck-demo"

#: What each panel key waits for before the picture is taken.
DRAWN = {"1": "integrity score", "4": "frozen prompt", "6": "pending write", "7": "History"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "screenshots" / "serve-chromium.png")
    ap.add_argument("--panel", default="4", choices=sorted(DRAWN), help="the panel key pressed (default 4: Capacity)")
    args = ap.parse_args()
    why = unavailable_reason()
    if why:
        print(f"cannot take the picture: {why}", file=sys.stderr)
        return 1
    shutil.rmtree(DEMO_PATH, ignore_errors=True)
    home = build_demo_home(DEMO_PATH, seed=DEMO_SEED, now=DEMO_NOW)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        with served(home.path, tmp=tmp) as s, chromium(tmp / "profile", width=1400, height=860) as ctx:
            page = ctx.new_page()
            page.goto(s.url)
            wait_for_text(page, "1 Integrity")
            press(page, args.panel)
            wait_for_text(page, DRAWN[args.panel])
            page.evaluate("() => document.fonts.ready")
            page.screenshot(path=str(args.out))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
