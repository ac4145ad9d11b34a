"""Soak: the dashboard open in a pty beside a simulated Hermes, for minutes (issue 8).

    python bench/bench_live.py [--minutes 10] [--idle 120] [--out bench/results/live.md]
    python bench/bench_live.py --home ~/.cache/memdeck-bench/perf9-1000000 --out bench/results/live_1m.md

The simulated Hermes is a separate process running Hermes' own code (hermes-agent 0.19.0:
``hermes_state.SessionDB``, ``tools.memory_tool.MemoryStore`` and ``memory_tool`` with
``write_approval`` on for one staged pending write) on a fresh demo home, or on a copy of
``--home`` (a bench home: the 1M one is copied, 2.5 GB, before the dashboard starts):

* a message every 2 s in the live session (every fifth an assistant tool call);
* a memory write every 10 s (``MemoryStore.replace`` of one entry, a new length each time, so
  MEMORY.md's usage shown on screen is a new number after every write);
* one staged pending write at 25 %, an in-place compaction (``archive_and_compact``) at 40 %,
  and a ``/new`` (the live session ended, a new one started) at 50 %.

memdeck runs as ``python -m memdeck.tui --home H`` in a pty of 120x40 on the Capacity panel.
Measured: CPU of the dashboard process while Hermes is live and then idle (percent of one core),
its RSS at start and end, wake-ups per second while idle (context switches summed over its
threads), and for each memory write the time until the new usage number is on screen (median,
p95). At the end the screen must show Hermes' final usage and the new live session's id.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import pty
import shutil
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

HERMES = r'''
import json, os, sys, time
from pathlib import Path
from hermes_state import SessionDB
from tools.memory_tool import MemoryStore
from agent.context_compressor import SUMMARY_PREFIX

home = Path(os.environ["HERMES_HOME"])
minutes = float(sys.argv[1])
live = sys.argv[2]
db = SessionDB(home / "state.db")
store = MemoryStore()
store.load_from_disk()
end = time.time() + minutes * 60
start = time.time()
def usage():
    return len("\n§\n".join(MemoryStore()._read_file(home / "memories" / "MEMORY.md")))
marker = "Soak marker: the simulated Hermes keeps rewriting this entry"
if usage() + 3 + len(marker) + 45 > 2200:  # a nearly full MEMORY.md (a bench home): a shorter entry
    marker = "Soak marker"
store.add("memory", marker)
current = marker
def say(**kw):
    print(json.dumps({"t": time.time(), **kw}), flush=True)
i = 0
staged = compacted = renewed = False
next_msg = time.time()
next_mem = time.time() + 5
while time.time() < end:
    now = time.time()
    frac = (now - start) / (minutes * 60)
    if now >= next_msg:
        i += 1
        if i % 5 == 0:
            db.append_message(live, "assistant", None, tool_calls=[{"id": f"c{i}", "type": "function",
                              "function": {"name": "terminal", "arguments": json.dumps({"command": f"ls -la /srv/{i}"})}}])
            db.append_message(live, "tool", f"total {i}\ndrwxr-xr-x 2 root root 4096 srv{i}", tool_name="terminal", tool_call_id=f"c{i}")
        else:
            db.append_message(live, "user" if i % 2 else "assistant", f"soak turn {i}: deploy the kubernetes rollout again")
        next_msg += 2
    if now >= next_mem:
        new = marker + " " + "x" * (i % 37 + 1) + f" #{i}"
        r = store.replace("memory", current[:40], new)
        if r.get("success"):
            current = new
            say(event="memory", chars=usage())
        next_mem += 10
    if not staged and frac >= 0.25:
        cfg = home / "config.yaml"
        text = cfg.read_text() if cfg.exists() else ""
        cfg.write_text(text + "\nmemory:\n  write_approval: true\n" if "write_approval" not in text else text)
        from tools import memory_tool
        out = json.loads(memory_tool.memory_tool(action="add", target="user", content="Prefers short answers in the soak",
                                                 store=MemoryStore()))
        cfg.write_text(text)
        say(event="pending", result=out)
        staged = True
    if not compacted and frac >= 0.4:
        import sqlite3  # the last live rows (get_messages would load a 1M-row session whole)
        ro = sqlite3.connect(home / "state.db")
        rows = ro.execute("SELECT role, content FROM messages WHERE session_id = ? AND active = 1"
                          " ORDER BY id DESC LIMIT 6", (live,)).fetchall()[::-1]
        ro.close()
        tail = [{"role": r, "content": c} for r, c in rows if c]
        msgs = [{"role": "assistant", "content": SUMMARY_PREFIX + " The soak has been deploying a rollout."}] + tail
        db.archive_and_compact(live, msgs)
        say(event="compaction")
        compacted = True
    if not renewed and frac >= 0.5:
        db.end_session(live, "new_session")
        live = time.strftime("%Y%m%d_%H%M%S_") + "50a4ed"
        db.create_session(live, source="cli")
        db.append_message(live, "user", "hello from the new session")
        say(event="new_session", id=live)
        renewed = True
    time.sleep(0.05)
say(event="done", chars=usage(), live=live)
'''


def _cpu_seconds(pid: int) -> float:
    parts = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _switches(pid: int) -> int:
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            for line in (task / "status").read_text().splitlines():
                if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total


def _write_bytes(pid: int) -> int:
    """Bytes the process caused to be written to storage (``/proc/<pid>/io`` ``write_bytes``)."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("write_bytes:"):
            return int(line.split()[1])
    return 0


def _growth_after(samples: list[tuple[float, float]], warm_s: float, end: float) -> str:
    """RSS growth from the first sample after ``warm_s`` seconds to ``end``, in MiB, and per hour."""
    later = [(t, r) for t, r in samples if t >= warm_s]
    if len(later) < 2:
        return "n/a (soak too short)"
    (t0, r0), (t1, _) = later[0], later[-1]
    return f"{end - r0:+.1f} MiB over {(t1 - t0) / 60:.0f} min"


def _rss_by_step(samples: list[tuple[float, float]], step_s: float) -> str:
    """RSS at each ``step_s`` mark of the soak (the first sample at or after it), in MiB.

    One number per step shows whether growth levels off: a leak climbs at every step, a cache
    warming up climbs and then stays.
    """
    marks, t = [], step_s
    for when, rss in samples:
        if when >= t:
            marks.append(f"{when / 60:.0f} min {rss:.1f}")
            t += step_s * (1 + int((when - t) // step_s))
    return ", ".join(marks) if marks else "n/a (soak too short)"


class Screen:
    """Reads everything the dashboard writes to its pty and remembers when each chunk came."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.chunks: list[tuple[float, str]] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        while True:
            try:
                data = os.read(self.fd, 65536)
            except OSError:
                return
            if not data:
                return
            with self.lock:
                self.chunks.append((time.time(), data.decode("utf-8", "replace")))

    def first_after(self, needle: str, t0: float) -> float | None:
        with self.lock:
            for t, chunk in self.chunks:
                if t >= t0 and needle in chunk:
                    return t
        return None

    def wait_for(self, needle: str, t0: float, timeout: float) -> float | None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            hit = self.first_after(needle, t0)
            if hit is not None:
                return hit
            time.sleep(0.02)
        return None


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--idle", type=float, default=120.0)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "live.md"))
    ap.add_argument("--home", help="soak on a copy of this home instead of a fresh demo home")
    ap.add_argument("--layout", choices=("panels", "overview"), default="panels",
                    help="the dashboard's layout: the Capacity panel (default) or the overview (memdeck --layout "
                    "overview; it shows the same n/2,200 chars)")
    ap.add_argument("--sizes", help="round 3 (issue 23): comma-separated bench/bighome.py sizes, memdeck and hermesd "
                                    "beside a live Hermes as ratios (bench/live_beside.py)")
    ap.add_argument("--window", type=float, default=60.0, help="with --sizes: seconds beside the agent")
    ap.add_argument("--hermesd", default=os.environ.get("HERMESD", "hermesd"), help="with --sizes: the hermesd program")
    args = ap.parse_args()
    if args.sizes:
        sys.path.insert(0, str(ROOT / "bench"))
        import live_beside
        out = Path(args.out) if args.out != str(ROOT / "bench" / "results" / "live.md") else ROOT / "bench" / "results" / "live_beside.md"
        return live_beside.main([int(x) for x in args.sizes.split(",")], args.window, args.hermesd, out)

    sys.path.insert(0, str(ROOT))
    from memdeck.core.demo import DEMO_SEED, build_demo_home
    from memdeck.core.home import HermesHome
    from memdeck.core.sessions.statedb import StateDB

    work = Path(tempfile.mkdtemp(prefix="memdeck-soak-"))
    if args.home:
        shutil.copytree(Path(args.home).expanduser(), work / "home")
        home = HermesHome(work / "home")
    else:
        home = build_demo_home(work / "home", seed=DEMO_SEED, now=float(int(time.time())))
    with StateDB(home.state_db) as db:
        live = db.live_session().id
    env = {**os.environ, "HERMES_HOME": str(home.path), "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}

    pid, fd = pty.fork()
    if pid == 0:  # the dashboard, as a person starts it
        os.execvpe(sys.executable, [sys.executable, "-m", "memdeck.tui", "--home", str(home.path),
                                    *(["--layout", "overview"] if args.layout == "overview" else [])], env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    screen = Screen(fd)
    t_launch = time.time()
    if args.layout == "panels":
        os.write(fd, b"4")  # the Capacity panel (typed ahead, as a person does)
    first = screen.wait_for("/2,200 chars", t_launch, 60)
    screen.wait_for("updated", t_launch, 60)  # the full snapshot is on screen
    cpu0, rss0 = _cpu_seconds(pid), _rss_mib(pid)

    hermes = subprocess.Popen([sys.executable, "-c", HERMES, str(args.minutes), live], env=env,
                              stdout=subprocess.PIPE, text=True)
    t_live = time.time()
    latencies: list[float] = []
    missed = 0
    events: list[dict] = []
    rss_samples = [(0.0, rss0)]
    io0 = _write_bytes(pid)
    for line in hermes.stdout:  # one JSON line per Hermes event
        ev = json.loads(line)
        events.append(ev)
        if ev["event"] == "memory":
            hit = screen.wait_for(f"{ev['chars']:,}/2,200", ev["t"], 10.0)
            if hit is None:
                missed += 1
            else:
                latencies.append(max(0.0, hit - ev["t"]) * 1000)
            rss_samples.append((time.time() - t_live, _rss_mib(pid)))
    hermes.wait()
    t_end_live = time.time()
    written = _write_bytes(pid) - io0
    cpu_live = (_cpu_seconds(pid) - cpu0) / (t_end_live - t_live) * 100

    done = events[-1]
    new_live = next((e["id"] for e in events if e["event"] == "new_session"), None)
    usage_ok = screen.wait_for(f"{done['chars']:,}/2,200", t_live, 10.0) is not None
    time.sleep(2.0)
    sw0, cpu1, t_idle = _switches(pid), _cpu_seconds(pid), time.time()
    time.sleep(args.idle)
    idle_s = time.time() - t_idle
    cpu_idle = (_cpu_seconds(pid) - cpu1) / idle_s * 100
    wakeups = (_switches(pid) - sw0) / idle_s
    rss_end = _rss_mib(pid)
    t_tab = time.time()
    os.write(fd, b"1")  # Integrity: which session does it show?
    session_ok = new_live is not None and screen.wait_for(new_live, t_tab, 10.0) is not None
    os.write(fd, b"q")
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
    shutil.rmtree(work, ignore_errors=True)

    lat = sorted(latencies)
    p95 = lat[min(len(lat) - 1, round(0.95 * (len(lat) - 1)))] if lat else float("nan")
    rows = [
        ("soak length", f"{args.minutes:g} min live + {idle_s:.0f} s idle"),
        ("launch -> memory usage on screen", f"{(first - t_launch):.2f} s" if first else "never"),
        ("CPU while Hermes is live (one core)", f"{cpu_live:.2f} %"),
        ("CPU idle after (one core)", f"{cpu_idle:.3f} %"),
        ("wake-ups per second idle (all threads)", f"{wakeups:.1f}"),
        ("RSS at start / end / max during", f"{rss0:.1f} / {rss_end:.1f} / {max(r for _, r in rss_samples):.1f} MiB"),
        ("RSS growth after the first 2 minutes (warm caches) to the end", _growth_after(rss_samples, 120.0, rss_end)),
        ("RSS every 10 minutes (MiB)", _rss_by_step(rss_samples, 600.0)),
        ("bytes written to disk by the dashboard while Hermes was live", f"{written:,}"),
        ("memory writes seen on screen", f"{len(latencies)} of {len(latencies) + missed}"),
        ("external write -> screen, median / p95", f"{statistics.median(lat):.0f} / {p95:.0f} ms" if lat else "n/a"),
        ("final usage on screen equals Hermes'", "yes" if usage_ok else "NO"),
        ("shows the new live session after /new", "yes" if session_ok else "NO"),
    ]
    table = "| measure | value |\n|---|---|\n" + "\n".join(f"| {k} | {v} |" for k, v in rows)
    print(table)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    where = f"a copy of `{args.home}`" if args.home else "a fresh demo home"
    out.write_text(f"# live soak (bench/bench_live.py)\n\nHome: {where}.\n\n" + table + "\n", encoding="utf-8")
    return 0 if usage_ok and session_ok and not missed else 1


if __name__ == "__main__":
    sys.exit(main())
