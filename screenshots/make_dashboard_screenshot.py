"""Regenerate ``screenshots/hermes-dashboard-memory.png``: memdeck's "Memory" tab in Hermes 0.19's
own web dashboard, on the demo home, in a real headless Chromium (Debian's ``chromium``, driven by
Playwright; never a downloaded browser).

    python screenshots/make_dashboard_screenshot.py [--out FILE]

The demo home (seed 7, ``memdeck.core.demo.DEMO_NOW``) is built where make_screenshots.py builds
it, ``memdeck plugin install`` is run on it, Hermes' dashboard is started on it as ``hermes
dashboard --no-open --port 0`` starts it (``tests/helpers/hermes_dashboard.py``), and the tab is
saved once it lists the review queue.
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
from memdeck.core.plugin.install import install_plugin  # noqa: E402
from tests.helpers.browser import chromium, unavailable_reason  # noqa: E402
from tests.helpers.hermes_dashboard import hermes_dashboard  # noqa: E402

DEMO_PATH = Path(tempfile.gettempdir()) / "memdeck-demo"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "screenshots" / "hermes-dashboard-memory.png")
    args = ap.parse_args()
    why = unavailable_reason()
    if why:
        print(f"cannot take the picture: {why}", file=sys.stderr)
        return 1
    shutil.rmtree(DEMO_PATH, ignore_errors=True)
    home = build_demo_home(DEMO_PATH, seed=DEMO_SEED, now=DEMO_NOW)
    install_plugin(home)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        with hermes_dashboard(home.path, tmp) as dash, chromium(tmp / "profile", width=1400, height=1400) as ctx:
            page = ctx.new_page()
            page.goto(dash.base + "/memdeck")
            page.locator("[data-memdeck-tab] [data-pending-id]").first.wait_for(timeout=60_000)
            page.evaluate("() => document.fonts.ready")
            page.screenshot(path=str(args.out), full_page=True)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
