"""Issue 9 on a home of the real shape, against the peers, as ratios.

    python bench/bench_bighome.py [--messages 200000] [--window 60] [--hermesd /work/peers/hermesd/bin/hermesd]
    python bench/bench_bighome.py --writer core --messages 1000000   # bench/bighome_core.py's home

The home comes from bench/bighome.py (written by Hermes 0.19's own SessionDB; built once,
cached) and is copied to a temp dir for the run (the appender writes to it). Measured one
program at a time (the machine has 2 shared cores), every step bounded in time:

* dashboards in a pty of 120x40, TERM=xterm-256color, the key typed ahead as a person does:
  memdeck ``python -m memdeck.tui --home H`` (key ``4``, Capacity; memory usage on screen =
  ``/2,200 chars``; full history = ``updated`` on the status line), hermesd ``hermesd
  --hermes-home H`` at its default 5 s poll (key ``0``, its Memory detail; memory usage on
  screen = ``MEMORY.md  <n> words``; it has no separate history stage). Then for ``--window``
  seconds an appender process writes a message every 2 s into the live session through
  Hermes' ``SessionDB.append_message``; over that window: CPU (utime+stime from
  /proc/PID/stat, percent of one core), disk bytes written (/proc/PID/io ``write_bytes``), RSS
  growth (VmRSS at the end minus at the start); peak RSS is VmHWM at the end;
* ``memdeck status --json`` vs ``hermesd --snapshot --snapshot-format json`` (each program's
  one-shot headless overview): wall time of the subprocess, median of 3;
* recall: memdeck ``core.sessions.recall.recall`` vs Hermes' ``tools.session_search_tool.
  session_search(query=..., db=SessionDB(state.db))`` (discover mode, limit 3), each in its own
  process on one open database, 5 runs per query kind, p50/p95 in ms; a Hermes query that does
  not answer within 30 s is killed and reported as ``>30 s``. Then what the Recall panel shows
  first, against the same Hermes runs: the first page of ``core.sessions.recall.iter_recall``
  (newest first, the same hits as ``recall(sort="newest")``).

Ratios are memdeck / peer (below 1: memdeck is faster or smaller). Writes bench/results/bighome.md.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import pty
import re
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from bench_live import _write_bytes  # noqa: E402
from bighome import CJK, NO_HIT, build  # noqa: E402

ANSI = re.compile(r"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][A-Za-z0-9]|\x1b[=>78cM]")
QUERIES = {"rare identifier": "(from the home)", "common word": "kubernetes", "phrase": '"grafana prometheus"',
           "CJK": CJK[1], "prefix": "kubern*", "no hit": NO_HIT}
HERMES_TIMEOUT = 30.0

APPENDER = r'''
import sys, time
from pathlib import Path
from hermes_state import SessionDB
db = SessionDB(Path(sys.argv[1]))
sid, seconds = sys.argv[2], float(sys.argv[3])
end = time.time() + seconds
i = 0
while time.time() < end:
    i += 1
    db.append_message(sid, "user" if i % 2 else "assistant", f"appender turn {i}: kubernetes rollout status")
    time.sleep(2.0)
db.close()
'''

RECALL = r'''
import json, sys, time
kind, path, query, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
if kind == "memdeck":
    from memdeck.core.sessions.statedb import StateDB
    from memdeck.core.sessions.recall import recall
    db = StateDB(path)
    run = lambda: len(recall(db, query))
elif kind == "memdeck-page":  # what the Recall panel shows first: iter_recall's first page, newest first
    from memdeck.core.sessions.statedb import StateDB
    from memdeck.core.sessions.recall import iter_recall
    db = StateDB(path)
    run = lambda: len(next(iter_recall(db, query), []))
else:
    from pathlib import Path
    from hermes_state import SessionDB
    from tools.session_search_tool import session_search
    db = SessionDB(Path(path))
    def run():
        out = json.loads(session_search(query=query, db=db))
        return len(out.get("results") or out.get("sessions") or [])
print(json.dumps({"ready": True}), flush=True)
for _ in range(runs):
    t = time.perf_counter()
    n = run()
    print(json.dumps({"s": time.perf_counter() - t, "hits": n}), flush=True)
'''


# ── /proc ──────────────────────────────────────────────────────────────────────
def _cpu_s(pid: int) -> float:
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def _status(pid: int, key: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


# ── the pty ────────────────────────────────────────────────────────────────────
class Screen:
    """Everything a program writes to its pty, ANSI stripped; the time each pattern first matched."""

    def __init__(self, fd: int) -> None:
        self.fd, self.text, self.lock = fd, "", threading.Lock()
        self.watch: dict[str, float | None] = {}
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        while True:
            try:
                data = os.read(self.fd, 65536)
            except OSError:
                return
            if not data:
                return
            now = time.time()
            with self.lock:
                self.text += ANSI.sub("", data.decode("utf-8", "replace"))
                self.text = self.text[-200_000:]
                for pat, hit in self.watch.items():
                    if hit is None and re.search(pat, self.text):
                        self.watch[pat] = now

    def expect(self, pattern: str) -> None:
        with self.lock:
            self.watch.setdefault(pattern, None)

    def wait(self, pattern: str, timeout: float) -> float | None:
        self.expect(pattern)
        deadline = time.time() + timeout
        while time.time() < deadline:
            with self.lock:
                hit = self.watch[pattern]
            if hit is not None:
                return hit
            time.sleep(0.01)
        return None


def dashboard(name: str, argv: list[str], env: dict, key: bytes, mem_pat: str, full_pat: str | None,
              home: Path, live: str, window: float, launch_timeout: float = 180.0,
              key_after: str | None = None) -> dict:
    """One dashboard in a pty; ``key`` typed ahead, or once ``key_after`` is on screen (a program
    that drops keys typed before its first frame)."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execvpe(argv[0], argv, env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    screen = Screen(fd)
    screen.expect(mem_pat)
    if full_pat:
        screen.expect(full_pat)
    t0 = time.time()
    out: dict = {"name": name}
    try:
        if key_after:
            if screen.wait(key_after, launch_timeout) is None:
                out.update(mem=None, tail=screen.text[-600:])
                return out
        os.write(fd, key)
        t_mem = screen.wait(mem_pat, launch_timeout)
        out["mem"] = None if t_mem is None else t_mem - t0
        if full_pat:
            t_full = screen.wait(full_pat, launch_timeout)
            out["full"] = None if t_full is None else t_full - t0
        if t_mem is None:
            out["tail"] = screen.text[-600:]
            return out
        time.sleep(1.0)  # let the first paint settle
        cpu0, w0, rss0, t_w = _cpu_s(pid), _write_bytes(pid), _status(pid, "VmRSS"), time.time()
        app = subprocess.run([sys.executable, "-c", APPENDER, str(home / "state.db"), live, str(window)],
                             env=env, timeout=window + 30, capture_output=True, text=True)
        dt = time.time() - t_w
        out.update(cpu=(_cpu_s(pid) - cpu0) / dt * 100, written=_write_bytes(pid) - w0,
                   rss_growth=_status(pid, "VmRSS") - rss0, hwm=_status(pid, "VmHWM"), window=dt,
                   appender_rc=app.returncode)
        return out
    finally:
        try:
            os.write(fd, b"q")
            for _ in range(100):
                if os.waitpid(pid, os.WNOHANG)[0]:
                    break
                time.sleep(0.05)
            else:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
        except (OSError, ChildProcessError):
            pass
        os.close(fd)


def wall_median(argv: list[str], env: dict, runs: int = 3, timeout: float = 120.0) -> tuple[float | None, int]:
    ts, rc = [], 0
    for _ in range(runs):
        t = time.perf_counter()
        try:
            p = subprocess.run(argv, env=env, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return None, -1
        ts.append(time.perf_counter() - t)
        rc = rc or p.returncode
    return statistics.median(ts), rc


def recall_times(kind: str, db: Path, query: str, env: dict, runs: int = 5, timeout: float = HERMES_TIMEOUT,
                 budget: float = 60.0) -> dict:
    """p50/p95 seconds and hits of ``runs`` queries; ``timed_out`` if one did not answer in ``timeout``;
    fewer runs (``runs`` in the result) when they took more than ``budget`` seconds in all."""
    p = subprocess.Popen([sys.executable, "-c", RECALL, kind, str(db), query, str(runs)], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    lines: list[dict] = []

    def reader() -> None:
        for line in p.stdout:
            lines.append(json.loads(line))

    th = threading.Thread(target=reader, daemon=True)
    th.start()
    deadline = time.time() + 60  # import + open
    seen, timed_out, t_first = 0, False, None
    while seen < runs + 1:
        if len(lines) > seen:
            seen = len(lines)
            deadline = time.time() + timeout
            t_first = t_first or time.time()
            if time.time() - t_first > budget:
                p.kill()
                break
            continue
        if p.poll() is not None:
            th.join(2)
            break
        if time.time() > deadline:
            timed_out = True
            p.kill()
            break
        time.sleep(0.005)
    p.wait()
    ts = sorted(x["s"] for x in lines[1:])
    if not ts:
        return {"timed_out": timed_out, "error": None if timed_out else f"exit {p.returncode}"}
    return {"p50": ts[len(ts) // 2], "p95": ts[min(len(ts) - 1, round(0.95 * (len(ts) - 1)))],
            "hits": lines[-1]["hits"], "timed_out": timed_out, "runs": len(ts)}


# ── formatting ─────────────────────────────────────────────────────────────────
def _s(x: float | None) -> str:
    return "never" if x is None else (f"{x:.2f} s" if x >= 0.1 else f"{x * 1000:.0f} ms")


def _ratio(a: float | None, b: float | None) -> str:
    if a is None or b is None:
        return "n/a"
    if b == 0:
        return "n/a (peer 0)" if a else "1 (both 0)"
    r = a / b
    return f"{r:.2f}" if r >= 0.01 else f"{r:.2g}"


def _core_info(home: Path, n: int) -> dict:
    """``.built``-like facts of a bench/bighome_core.py home: its live session and compactions."""
    import sqlite3
    ro = sqlite3.connect(f"file:{home / 'state.db'}?immutable=1", uri=True)  # no side files
    try:
        live = ro.execute("SELECT id FROM sessions WHERE ended_at IS NULL ORDER BY started_at DESC LIMIT 1").fetchone()[0]
    finally:
        ro.close()
    rows, compactions = (int(x) for x in (home / ".built").read_text().split()[:2])
    return {"rows": rows, "compactions": compactions, "live_session": live}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--window", type=float, default=60.0)
    ap.add_argument("--hermesd", default="/work/peers/hermesd/bin/hermesd")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "bighome.md"))
    ap.add_argument("--writer", choices=("hermes", "core"), default="hermes",
                    help="hermes: the home Hermes' own SessionDB wrote (bench/bighome.py); core: memdeck's "
                         "Hermes 0.19-shaped writer (bench/bighome_core.py), for sizes Hermes' per-row writer "
                         "cannot build here in reasonable time")
    args = ap.parse_args()

    if args.writer == "core":
        from bighome_core import build as build_core
        src = build_core(args.messages).state_db.parent
        info = _core_info(src, args.messages)
    else:
        src = build(args.messages, progress=True)
        info = json.loads((src / ".built").read_text())
    tmp = Path(tempfile.mkdtemp(prefix="memdeck-bighome-"))
    home = tmp / "home"
    shutil.copytree(src, home)
    shutil.rmtree(home / "memdeck", ignore_errors=True)  # a first launch: no memdeck.db from earlier runs
    live = info["live_session"]
    import sqlite3
    ro = sqlite3.connect(f"file:{home / 'state.db'}?immutable=1", uri=True)  # no side files
    rare = ro.execute("SELECT content FROM messages WHERE content LIKE 'rare identifier ZX%' ORDER BY id "
                      "LIMIT 1 OFFSET ?", (info["rows"] // 2000,)).fetchone()[0]
    ro.close()
    QUERIES["rare identifier"] = rare.split()[2]
    env = {**os.environ, "HERMES_HOME": str(home), "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
    try:
        md = dashboard("memdeck", [sys.executable, "-m", "memdeck.tui", "--home", str(home)], env, b"4",
                       r"/2,200 chars", r"updated", home, live, args.window)
        print("memdeck dashboard:", md, file=sys.stderr, flush=True)
        hd = dashboard("hermesd", [args.hermesd, "--hermes-home", str(home)], env, b"0",
                       r"MEMORY\.md\s+[\d,]+ words", None, home, live, args.window,
                       key_after=r"\[q\] Quit")
        print("hermesd dashboard:", hd, file=sys.stderr, flush=True)
        st_m = wall_median(["memdeck", "status", "--json"], env)
        st_h = wall_median([args.hermesd, "--hermes-home", str(home), "--snapshot", "--snapshot-format", "json"], env)
        print("status:", st_m, st_h, file=sys.stderr, flush=True)
        rec = {}
        for kind, q in QUERIES.items():
            rec[kind] = (recall_times("memdeck", home / "state.db", q, env),
                         recall_times("hermes", home / "state.db", q, env),
                         recall_times("memdeck-page", home / "state.db", q, env))
            print("recall", kind, rec[kind], file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    def mib(x):
        return "n/a" if x is None else f"{x:.0f} MiB"

    rows = [
        ("launch -> memory usage on screen", _s(md.get("mem")), _s(hd.get("mem")), _ratio(md.get("mem"), hd.get("mem"))),
        ("launch -> full history visible", _s(md.get("full")), "(one stage: as above)", _ratio(md.get("full"), hd.get("mem"))),
        ("peak RSS (VmHWM)", mib(md.get("hwm")), mib(hd.get("hwm")), _ratio(md.get("hwm"), hd.get("hwm"))),
        ("  appender exit code (0 = wrote every 2 s)", str(md.get("appender_rc")), str(hd.get("appender_rc")), ""),
        (f"RSS growth over {args.window:.0f} s, appender every 2 s", f"{md.get('rss_growth', float('nan')):+.1f} MiB",
         f"{hd.get('rss_growth', float('nan')):+.1f} MiB", "n/a"),
        ("CPU, appender every 2 s (% of one core)", f"{md.get('cpu', float('nan')):.1f} %", f"{hd.get('cpu', float('nan')):.1f} %",
         _ratio(md.get("cpu"), hd.get("cpu"))),
        (f"disk written by the dashboard over {args.window:.0f} s", f"{md.get('written', 0):,} B", f"{hd.get('written', 0):,} B",
         _ratio(md.get("written"), hd.get("written"))),
        ("`memdeck status --json` vs `hermesd --snapshot --snapshot-format json`, median of 3",
         _s(st_m[0]) + ("" if st_m[1] == 0 else f" (rc {st_m[1]})"), _s(st_h[0]) + ("" if st_h[1] == 0 else f" (rc {st_h[1]})"),
         _ratio(st_m[0], st_h[0])),
    ]
    def cell(r):
        if "p50" not in r:
            return f">{HERMES_TIMEOUT:.0f} s" if r["timed_out"] else f"failed ({r['error']})"
        s = f"{r['p50'] * 1000:.0f} / {r['p95'] * 1000:.0f} ms ({r['hits']} sessions)"
        if r["runs"] < 5:
            s += f" [{r['runs']} runs]"
        return s + (f"; then >{HERMES_TIMEOUT:.0f} s" if r["timed_out"] else "")

    def ratio(m, h):
        return _ratio(m.get("p95"), h.get("p95")) if "p95" in h and not h["timed_out"] else (
            f"< {m['p95'] / HERMES_TIMEOUT:.4f}" if "p95" in m else "n/a")

    for kind, (m, h, _page) in rec.items():
        rows.append((f"recall p50 / p95, ranked as `session_search`: {kind} `{QUERIES[kind]}`", cell(m), cell(h), ratio(m, h)))
    for kind, (_m, h, page) in rec.items():
        rows.append((f"Recall panel's first page (newest first) p50 / p95: {kind}", cell(page), cell(h), ratio(page, h)))

    writer = ("`bench/bighome.py {n}` (Hermes 0.19 SessionDB)" if args.writer == "hermes" else
              "`bench/bighome_core.py {n}` (memdeck's Hermes 0.19-shaped writer)").format(n=args.messages)
    head = (f"Home: {writer}: {info['rows']:,} live-session rows, "
            f"{info['compactions']} in-place compactions, "
            + ("5 ended sessions, a `work` profile" if args.writer == "hermes" else "older sessions")
            + ", MemLock anchors; copied before the run (state.db in the page cache for both programs).\n\n")
    table = ("| measure | memdeck | peer (hermesd; recall: Hermes `session_search`) | memdeck / peer |\n|---|---|---|---|\n"
             + "\n".join(f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows))
    print(head + table)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("# big home of the real shape, against the peers (bench/bench_bighome.py)\n\n" + head + table + "\n",
                   encoding="utf-8")
    for d in (md, hd):
        if "tail" in d:
            print(f"{d['name']}: never showed memory usage; screen tail: {d['tail']!r}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
