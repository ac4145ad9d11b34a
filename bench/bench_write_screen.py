"""Issue 38 #2: external memory write -> screen and CPU beside a live agent, memdeck then hermesd
in the same run on one bench/bighome.py home (``bench/live_beside.py``'s dashboards and agent).

    python bench/bench_write_screen.py [--size 3000] [--window 60] [--hermesd hermesd] [--pyspy OUT]

Each program: CPU (utime+stime, % of one core) over the window, bytes read per appended
message, external memory write -> screen (median), VmRSS at the start and end of the window and
VmHWM. ``--pyspy OUT``: py-spy records memdeck during its window (raw; summarise with
``bench/pyspy_top.py``; py-spy's sampling adds to the CPU and latency of that run). Prints one
JSON line with the load at each start.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from live_beside import Dash, beside_agent, load  # noqa: E402


def _rss(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM of ``pid`` in MiB."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key = line.split(":")[0]
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(line.split()[1]) / 1024
    return out


def _beside(dash: Dash, *args: object) -> dict:
    """beside_agent with the RSS at the start and the end of the window."""
    before = _rss(dash.pid)
    res = beside_agent(dash, *args)  # type: ignore[arg-type]
    after = _rss(dash.pid)
    return {**res, "rss_start": before["VmRSS"], "rss_end": after["VmRSS"], "rss_peak": after["VmHWM"]}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=3000)
    ap.add_argument("--window", type=float, default=60.0)
    ap.add_argument("--hermesd", default=os.environ.get("HERMESD", "hermesd"))
    ap.add_argument("--pyspy", help="record memdeck's window with py-spy into this path (.txt)")
    args = ap.parse_args()
    from bighome import build
    src = build(args.size, progress=False)
    info = json.loads((src / ".built").read_text())
    tmp = Path(tempfile.mkdtemp(prefix="memdeck-write-screen-"))
    home = tmp / "home"
    shutil.copytree(src, home)
    shutil.rmtree(home / "memdeck", ignore_errors=True)
    env = {**os.environ, "HERMES_HOME": str(home), "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    res: dict = {"size": args.size}
    try:
        res["load_memdeck"] = load()
        md = Dash([sys.executable, "-m", "memdeck.tui", "--home", str(home)], env)
        md.key(b"4")
        md.screen.first(r"/2,200 chars", 0, 300.0)
        md.screen.first(r"updated \d\d:\d\d:\d\d", 0, 600.0)
        time.sleep(2.0)
        spy = None
        if args.pyspy:
            spy = subprocess.Popen(["py-spy", "record", "--pid", str(md.pid), "--format", "raw", "--rate", "200",
                                    "--output", args.pyspy, "--duration", str(int(args.window))],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        res["memdeck"] = _beside(md, env, home, info["live_session"], args.window, r"{n}/2,200 chars", "chars")
        if spy is not None:
            spy.wait(timeout=args.window + 60)
        md.close()
        res["load_hermesd"] = load()
        hd = Dash([args.hermesd, "--hermes-home", str(home)], env)
        hd.screen.first(r"\[q\] Quit", 0, 300.0)
        hd.key(b"0")
        hd.screen.first(r"MEMORY\.md\s+[\d,]+ words", 0, 300.0)
        time.sleep(2.0)
        res["hermesd"] = _beside(hd, env, home, info["live_session"], args.window, r"MEMORY\.md\s+{n} words", "words")
        hd.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(res, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
