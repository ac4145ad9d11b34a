"""Large memory files (issue 13 #4): prints how long the CLI and the dashboard take on a
50 MB-class MEMORY.md (200k entries plus one 5 MB entry). Numbers only; nothing asserted.

Usage: python bench/bench_bigfile.py [--entries N]
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def build(root: Path, n: int) -> Path:
    (root / "memories").mkdir(parents=True)
    # ~225 chars an entry: 200k entries + the 5 MB one make the 50 MB file of issue 13 #4
    filler = "the deploy pipeline, the release train, the test matrix and the staging cluster " * 2
    entries = [f"entry {i} about {filler}{i * 7}" for i in range(n)]
    entries.append("y" * 5_000_000)
    (root / "memories" / "MEMORY.md").write_text("\n§\n".join(entries), encoding="utf-8")
    return root


def cli(home: Path, *args: str) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "memdeck.core.cli", "--home", str(home), *args],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t


async def tui(home: Path) -> tuple[float, float]:
    from memdeck.core.home import HermesHome
    from memdeck.tui.app import make_app

    app = make_app(HermesHome(home), watch=False)
    t = time.perf_counter()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("4")  # only the panel on screen is drawn: show Capacity
        while app.query_one("#capacity-table").row_count == 0:
            await pilot.pause(0.05)
        shown = time.perf_counter() - t
        q = time.perf_counter()
        await pilot.press("q")
    return shown, time.perf_counter() - q


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--entries", type=int, default=200_000)
    n = ap.parse_args().entries
    with tempfile.TemporaryDirectory() as d:
        home = build(Path(d) / "home", n)
        size = (home / "memories" / "MEMORY.md").stat().st_size
        print(f"MEMORY.md: {n:,} entries + one 5 MB entry, {size / 1e6:.1f} MB")
        print(f"memdeck status          {cli(home, 'status'):6.2f} s")
        print(f"memdeck status --json   {cli(home, 'status', '--json'):6.2f} s")
        print(f"memdeck memory list     {cli(home, 'memory', 'list'):6.2f} s")
        shown, quit_s = asyncio.run(tui(home))
        print(f"dashboard: Capacity rows shown after {shown:6.2f} s; q took {quit_s:6.2f} s")


if __name__ == "__main__":
    main()
