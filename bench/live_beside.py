"""Round 3 (issue 23): memdeck and hermesd beside a live Hermes on real long-lived homes, as ratios.

    python bench/bench_live.py --sizes 3000,200000,1000000 [--window 60] [--hermesd PATH]

Homes: bench/bighome.py (generator 2: older sessions compacted in place and by rotation, ended, at
the lowest ids, then the live one; written by Hermes 0.19's own ``SessionDB``), copied for the
run. For each size, one program at a time in a pty of 120x40 (the machine has 2 shared cores):

* memdeck ``python -m memdeck.tui --home H`` (key ``4``, Capacity) and hermesd ``hermesd
  --hermes-home H`` (its default 5 s poll; key ``0``, its Memory detail) beside the same
  agent process (Hermes' own ``SessionDB.append_message`` every 2 s into the live session,
  ``MemoryStore.replace`` every 10 s, an in-place ``archive_and_compact`` every ~800 active rows
  would be a 27-minute wait, so the window holds appends and memory writes only) for
  ``--window`` seconds: CPU (utime+stime, percent of one core), bytes read (``/proc/PID/io``
  ``rchar``: every ``read``/``pread`` of state.db, its WAL, memory files) per appended message,
  external memory write -> screen (memdeck: the new usage ``n/2,200 chars``; hermesd: the new
  ``MEMORY.md  n words``);
* then, memdeck alone (no agent): appended message -> screen, 10 appends 3 s apart (each early in
  a second), each timed to the first redraw of the status line's clock (``updated HH:MM:SS``, the
  snapshot's stamp) showing a stamp not older than the append's second;
* launch -> memory on screen (memdeck, hermesd) and the floor ``python -c "import textual.app"``;
* one-shot processes: ``memdeck status --json`` vs ``hermesd --snapshot --snapshot-format json``;
  ``memdeck recall WORD --json`` (a rare word) vs a process running Hermes' own
  ``tools.session_search_tool.session_search`` once; ``memdeck --help``; medians of 3;
* memdeck.db history bytes per external memory change (the ``history`` and ``history_seen``
  rows' text written during the window, divided by the changes seen).

Every line carries the machine's load average (``/proc/loadavg``) at its start. Writes
``bench/results/live_beside.md``.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import shutil
import signal
import sqlite3
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

ANSI = re.compile(r"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][A-Za-z0-9]|\x1b[=>78cM]")

AGENT = r'''
import json, os, sys, time
from pathlib import Path
from hermes_state import SessionDB
from tools.memory_tool import MemoryStore
home = Path(os.environ["HERMES_HOME"])
seconds, live = float(sys.argv[1]), sys.argv[2]
db = SessionDB(home / "state.db")
store = MemoryStore()
store.load_from_disk()
def usage():
    return len("\n§\n".join(MemoryStore()._read_file(home / "memories" / "MEMORY.md")))
marker = "Bench marker " + sys.argv[3]  # one per run: an earlier run's entry is not matched
r = store.add("memory", marker)
if not r.get("success"):
    print(json.dumps({"event": "error", "t": time.time(), "result": r}), flush=True)
current = marker
print(json.dumps({"event": "ready", "t": time.time()}), flush=True)
end = time.time() + seconds
i = 0
next_msg, next_mem = time.time(), time.time() + 5
while time.time() < end:
    now = time.time()
    if now >= next_msg:
        i += 1
        if i % 5 == 0:
            db.append_message(live, "assistant", None, tool_calls=[{"id": f"c{i}", "type": "function",
                              "function": {"name": "terminal", "arguments": json.dumps({"command": f"ls /srv/{i}"})}}])
            db.append_message(live, "tool", f"total {i}", tool_name="terminal", tool_call_id=f"c{i}")
            n = 2
        else:
            db.append_message(live, "user" if i % 2 else "assistant", f"bench turn {i}: kubernetes rollout status")
            n = 1
        print(json.dumps({"event": "append", "t": time.time(), "n": n}), flush=True)
        next_msg += 2
    if now >= next_mem:
        new = marker + " " + "x" * (i % 37 + 1) + f" #{i}"
        r = store.replace("memory", current, new)
        if r.get("success"):
            current = new
            print(json.dumps({"event": "memory", "t": time.time(), "chars": usage(),
                              "words": len(open(home / "memories" / "MEMORY.md", encoding="utf-8").read().split())}), flush=True)
        next_mem += 10
    time.sleep(0.02)
print(json.dumps({"event": "done", "t": time.time()}), flush=True)
'''

APPEND_ONE = r'''
import sys, time
from pathlib import Path
from hermes_state import SessionDB
db = SessionDB(Path(sys.argv[1]))
for i in range(int(sys.argv[3])):
    line = sys.stdin.readline()  # "go"
    if not line:
        break
    db.append_message(sys.argv[2], "user", f"latency probe {i}")
    print(time.time(), flush=True)
'''

SESSION_SEARCH = r'''
import json, sys
from pathlib import Path
from hermes_state import SessionDB
from tools.session_search_tool import session_search
out = json.loads(session_search(query=sys.argv[2], db=SessionDB(Path(sys.argv[1]))))
print(len(out.get("results") or out.get("sessions") or []))
'''


def load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def _cpu_s(pid: int) -> float:
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def _io(pid: int, key: str) -> int:
    """``/proc/PID/io`` ``key`` summed over the process (its threads included)."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


class Screen:
    """What a program writes to its pty (ANSI stripped), with the arrival time of each chunk."""

    def __init__(self, fd: int) -> None:
        self.fd, self.lock = fd, threading.Lock()
        self.chunks: list[tuple[float, str]] = []
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
                self.chunks.append((now, ANSI.sub("", data.decode("utf-8", "replace"))))
                if len(self.chunks) > 20000:
                    del self.chunks[:10000]

    def first(self, pattern: str, after: float, timeout: float, accept=None) -> float | None:
        """Arrival time of the first chunk at or after ``after`` matching ``pattern`` (and
        ``accept(match)``), waiting up to ``timeout`` seconds."""
        rx = re.compile(pattern)
        deadline = time.time() + timeout
        while True:
            with self.lock:
                chunks = list(self.chunks)
            for t, text in chunks:
                if t < after:
                    continue
                for m in rx.finditer(text):
                    if accept is None or accept(m):
                        return t
            if time.time() > deadline:
                return None
            time.sleep(0.005)


class Dash:
    """A dashboard in a pty."""

    def __init__(self, argv: list[str], env: dict) -> None:
        self.t0 = time.time()
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execvpe(argv[0], argv, env)
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.screen = Screen(self.fd)

    def key(self, k: bytes) -> None:
        os.write(self.fd, k)

    def close(self) -> None:
        try:
            os.write(self.fd, b"q")
            for _ in range(100):
                if os.waitpid(self.pid, os.WNOHANG)[0]:
                    break
                time.sleep(0.05)
            else:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
        except (OSError, ChildProcessError):
            pass
        try:
            os.close(self.fd)
        except OSError:
            pass


def beside_agent(dash: Dash, env: dict, home: Path, live: str, window: float, mem_pattern: str, mem_value: str) -> dict:
    """CPU, rchar per appended message and memory write -> screen of ``dash`` beside the agent."""
    agent = subprocess.Popen([sys.executable, "-c", AGENT, str(window), live, f"{os.getpid()}.{time.time():.0f}"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    json.loads(agent.stdout.readline())  # the marker entry is added: the window starts
    hist0 = history_bytes(home)
    cpu0, r0, w0, t0 = _cpu_s(dash.pid), _io(dash.pid, "rchar"), _io(dash.pid, "write_bytes"), time.time()
    appended, lat, missed = 0, [], 0
    for line in agent.stdout:
        ev = json.loads(line)
        if ev["event"] == "append":
            appended += ev["n"]
        elif ev["event"] == "memory":
            want = f"{ev[mem_value]:,}"
            hit = dash.screen.first(mem_pattern.format(n=re.escape(want)), ev["t"], 15.0)
            if hit is None:
                missed += 1
            else:
                lat.append((hit - ev["t"]) * 1000)
        elif ev["event"] == "done":
            break
    agent.wait()
    dt = time.time() - t0
    cpu, rchar = (_cpu_s(dash.pid) - cpu0) / dt * 100, _io(dash.pid, "rchar") - r0
    written = _io(dash.pid, "write_bytes") - w0
    hist1 = history_bytes(home)
    return {"cpu": cpu, "rchar_per_msg": rchar / max(1, appended), "appended": appended,
            "mem_ms": statistics.median(lat) if lat else None, "mem_seen": f"{len(lat)} of {len(lat) + missed}",
            "written_per_change": written / max(1, len(lat) + missed),
            "history_bytes": None if hist0 is None or hist1 is None else (hist1[0] - hist0[0], hist1[1] - hist0[1])}


def history_bytes(home: Path) -> tuple[int, int] | None:
    """(text bytes of memdeck.db's history + history_seen rows, history rows) now."""
    p = home / "memdeck" / "memdeck.db"
    if not p.exists():
        p = next(iter(home.glob("**/memdeck.db")), None)
        if p is None:
            return None
    c = sqlite3.connect(f"file:{p}?mode=ro", uri=True, timeout=10)
    try:
        h = c.execute("SELECT COALESCE(SUM(COALESCE(length(CAST(before AS BLOB)),0) + COALESCE(length(CAST(after AS BLOB)),0)"
                      " + length(CAST(attribution AS BLOB))), 0), COUNT(*) FROM history").fetchone()
        s = c.execute("SELECT COALESCE(SUM(length(CAST(content AS BLOB))), 0) FROM history_seen").fetchone()
        return int(h[0]) + int(s[0]), int(h[1])
    except sqlite3.Error:
        return None
    finally:
        c.close()


def append_latency(dash: Dash, env: dict, home: Path, live: str, n: int = 10) -> list[float]:
    """ms from each appended message (one process, one row per line on its stdin) to the first
    status line stamped at or after the append's second."""
    p = subprocess.Popen([sys.executable, "-c", APPEND_ONE, str(home / "state.db"), live, str(n)], env=env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out = []
    time.sleep(2.0)
    for _ in range(n):
        while time.time() % 1.0 > 0.5:  # not at the end of a second: the stamp tells the refresh apart
            time.sleep(0.01)
        p.stdin.write("go\n")
        p.stdin.flush()
        t = float(p.stdout.readline())
        stamp = time.strftime("%H:%M:%S", time.localtime(t))
        # the status line's clock (the only HH:MM:SS on screen); a redraw may carry only the cells
        # that changed, so the "updated" word need not be in the same chunk
        hit = dash.screen.first(r"(\d\d:\d\d:\d\d)", t, 10.0, accept=lambda m: m.group(1) >= stamp)
        out.append(float("nan") if hit is None else (hit - t) * 1000)
        time.sleep(3.0)
    p.stdin.close()
    p.wait()
    return out


def wall(argv: list[str], env: dict, runs: int = 3, timeout: float = 180.0) -> tuple[float | None, int]:
    ts, rc = [], 0
    for _ in range(runs):
        t = time.perf_counter()
        try:
            r = subprocess.run(argv, env=env, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return None, -1
        ts.append(time.perf_counter() - t)
        rc = rc or r.returncode
    return statistics.median(ts), rc


def one_size(n: int, window: float, hermesd: str) -> dict:
    from bighome import build
    src = build(n, progress=True)
    info = json.loads((src / ".built").read_text())
    tmp = Path(tempfile.mkdtemp(prefix="memdeck-beside-"))
    home = tmp / "home"
    shutil.copytree(src, home)
    shutil.rmtree(home / "memdeck", ignore_errors=True)
    live = info["live_session"]
    env = {**os.environ, "HERMES_HOME": str(home), "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
    # as installed: bytecode cached (an editable install with PYTHONDONTWRITEBYTECODE compiles
    # every memdeck module on every start, where Hermes' site-packages have theirs)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "core"), str(ROOT / "tui")], env=env,
                   capture_output=True)
    res: dict = {"n": n, "info": info}
    try:
        ro = sqlite3.connect(f"file:{home / 'state.db'}?mode=ro", uri=True)
        rare = ro.execute("SELECT content FROM messages WHERE content LIKE 'rare identifier ZX%' ORDER BY id "
                          "LIMIT 1 OFFSET ?", (info["rows"] // 2000,)).fetchone()[0].split()[2]
        ro.close()
        # memdeck: the first launch (no memdeck.db), then beside the agent, then alone
        res["load_memdeck"] = load()
        md = Dash([sys.executable, "-m", "memdeck.tui", "--home", str(home)], env)
        md.key(b"4")
        t_mem = md.screen.first(r"/2,200 chars", 0, 300.0)
        res["md_launch"] = None if t_mem is None else t_mem - md.t0
        md.screen.first(r"updated \d\d:\d\d:\d\d", 0, 600.0)
        time.sleep(2.0)
        res["md"] = beside_agent(md, env, home, live, window, r"{n}/2,200 chars", "chars")
        time.sleep(2.0)
        res["load_latency"] = load()
        res["md_append_ms"] = append_latency(md, env, home, live)
        md.close()
        # a later launch (memdeck.db holds the tracks now)
        md = Dash([sys.executable, "-m", "memdeck.tui", "--home", str(home)], env)
        md.key(b"4")
        t_mem = md.screen.first(r"/2,200 chars", 0, 300.0)
        res["md_launch_later"] = None if t_mem is None else t_mem - md.t0
        md.close()
        # hermesd beside the same agent
        res["load_hermesd"] = load()
        hd = Dash([hermesd, "--hermes-home", str(home)], env)
        hd.screen.first(r"\[q\] Quit", 0, 300.0)
        hd.key(b"0")
        t_mem = hd.screen.first(r"MEMORY\.md\s+[\d,]+ words", 0, 300.0)
        res["hd_launch"] = None if t_mem is None else t_mem - hd.t0
        time.sleep(2.0)
        res["hd"] = beside_agent(hd, env, home, live, window, r"MEMORY\.md\s+{n} words", "words")
        hd.close()
        # one-shot processes
        res["load_oneshot"] = load()
        # interleaved, one run of each per round (a shared machine's load moves between rounds)
        oneshot = {
            "status_md": ["memdeck", "status", "--json"],
            "status_hd": [hermesd, "--hermes-home", str(home), "--snapshot", "--snapshot-format", "json"],
            "recall_md": ["memdeck", "recall", rare, "--json"],
            "recall_hermes": [sys.executable, "-c", SESSION_SEARCH, str(home / "state.db"), rare],
            "help_md": ["memdeck", "--help"],
            "textual_floor": [sys.executable, "-c", "import textual.app"],
        }
        runs: dict[str, list[float]] = {k: [] for k in oneshot}
        rcs: dict[str, int] = {k: 0 for k in oneshot}
        for _ in range(5):
            for k, argv in oneshot.items():
                t, rc = wall(argv, env, runs=1)
                if t is not None:
                    runs[k].append(t)
                rcs[k] = rcs[k] or rc
        for k in oneshot:
            res[k] = (statistics.median(runs[k]) if runs[k] else None, rcs[k])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return res


def _ms(x: float | None) -> str:
    return "never" if x is None else (f"{x:.2f} s" if x >= 1 else f"{x * 1000:.0f} ms")


def _r(a, b) -> str:
    if a is None or b is None or b == 0:
        return "n/a"
    return f"{a / b:.2f}" if a / b >= 0.01 else f"{a / b:.2g}"


def table(results: list[dict]) -> str:
    sizes = [f"{r['n'] // 1000}k" if r["n"] < 1_000_000 else f"{r['n'] // 1_000_000}M" for r in results]
    rows: list[tuple[str, ...]] = []

    def row(name: str, goal: str, f) -> None:
        rows.append((name, goal, *[f(r) for r in results]))

    row("machine load (1 min) at start: memdeck / latency / hermesd / one-shot", "",
        lambda r: f"{r['load_memdeck']} / {r['load_latency']} / {r['load_hermesd']} / {r['load_oneshot']}")
    row("memdeck CPU beside the agent (one core)", "<= 1 %", lambda r: f"{r['md']['cpu']:.2f} %")
    row("hermesd CPU beside the agent", "", lambda r: f"{r['hd']['cpu']:.2f} %")
    row("  memdeck / hermesd", "", lambda r: _r(r["md"]["cpu"], r["hd"]["cpu"]))
    row("memdeck bytes read per appended message (rchar)", "<= 1 MB", lambda r: f"{r['md']['rchar_per_msg'] / 1e6:.3f} MB")
    row("hermesd bytes read per appended message", "", lambda r: f"{r['hd']['rchar_per_msg'] / 1e6:.3f} MB")
    row("  memdeck / hermesd", "", lambda r: _r(r["md"]["rchar_per_msg"], r["hd"]["rchar_per_msg"]))
    def append_cell(r: dict) -> str:
        seen = [x for x in r["md_append_ms"] if x == x]
        missed = len(r["md_append_ms"]) - len(seen)
        if not seen:
            return "never"
        note = f" ({missed} of {len(r['md_append_ms'])} not seen in 10 s)" if missed else ""
        return f"{statistics.median(seen):.0f} / {max(seen):.0f} ms" + note

    row("appended message -> screen, memdeck median / max (no agent)", "<= 100 ms", append_cell)
    row("external memory write -> screen, memdeck median", "<= 50 ms",
        lambda r: f"{r['md']['mem_ms']:.0f} ms ({r['md']['mem_seen']})" if r['md']['mem_ms'] is not None else "never")
    row("external memory write -> screen, hermesd median (5 s poll)", "",
        lambda r: f"{r['hd']['mem_ms']:.0f} ms ({r['hd']['mem_seen']})" if r['hd']['mem_ms'] is not None else "never")
    row("launch -> memory on screen, memdeck first / later launch", "<= 0.5 s (small home)",
        lambda r: f"{_ms(r['md_launch'])} / {_ms(r['md_launch_later'])}")
    row("launch -> memory on screen, hermesd", "", lambda r: _ms(r["hd_launch"]))
    row("floor: `python -c 'import textual.app'`", "", lambda r: _ms(r["textual_floor"][0]))
    row("`memdeck status --json`, median of 5", "<= 300 ms at 1M", lambda r: _ms(r["status_md"][0]))
    row("`hermesd --snapshot --snapshot-format json`", "", lambda r: _ms(r["status_hd"][0]))
    row("`memdeck recall RARE --json` process", "<= Hermes'", lambda r: _ms(r["recall_md"][0]))
    row("Hermes' one-shot `session_search` process", "", lambda r: _ms(r["recall_hermes"][0]))
    row("  memdeck / Hermes", "", lambda r: _r(r["recall_md"][0], r["recall_hermes"][0]))
    row("`memdeck --help`", "", lambda r: _ms(r["help_md"][0]))
    row("disk bytes written by the dashboard per external memory change (write_bytes)", "",
        lambda r: f"{r['md']['written_per_change'] / 1000:.1f} KB (hermesd {r['hd']['written_per_change'] / 1000:.1f} KB)")
    row("memdeck.db history text per external memory change", "",
        lambda r: "n/a" if not r["md"]["history_bytes"] or not r["md"]["history_bytes"][1] else
        f"{r['md']['history_bytes'][0] / r['md']['history_bytes'][1] / 1000:.1f} KB ({r['md']['history_bytes'][1]} changes)")
    head = "| measure | goal | " + " | ".join(sizes) + " |\n|---|---|" + "---|" * len(sizes) + "\n"
    return head + "\n".join("| " + " | ".join(r) + " |" for r in rows)


def main(sizes: list[int], window: float, hermesd: str, out: Path) -> int:
    results = []
    for n in sizes:
        print(f"== {n:,} rows (load {load()})", file=sys.stderr, flush=True)
        r = one_size(n, window, hermesd)
        print(json.dumps({k: v for k, v in r.items() if k != "info"}, default=str), file=sys.stderr, flush=True)
        results.append(r)
    t = table(results)
    homes = "; ".join(f"{r['n']:,}: {r['info']['rows']:,} rows, {r['info']['compactions']} compactions "
                      f"({r['info'].get('live_compactions', '?')} in the live session), {r['info'].get('rotations', 0)} rotations, "
                      f"{len(r['info'].get('older_sessions', []))} older sessions" for r in results)
    text = (f"# memdeck and hermesd beside a live Hermes (bench/bench_live.py --sizes)\n\n"
            f"Homes (bench/bighome.py, generator 2): {homes}. Agent window {window:.0f} s.\n\n{t}\n")
    print(text)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return 0
