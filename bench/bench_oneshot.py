"""One-shot processes against their peers, interleaved in one run (issue 23, gaps 1 and 2).

    python bench/bench_oneshot.py --install LABEL=PYTHON=HOME [--install ...] [--rounds 9]
                                  [--hermesd PATH] [--out FILE]

For each install (a Python whose ``memdeck`` is the one to measure, and its own copy of a home:
memdeck.db migrations make a newer memdeck's store unreadable to an older one) every round runs,
one after the other, ``memdeck status --json``, ``memdeck recall RARE --json`` (a rare word of
the home's bench/bighome.py rows), ``memdeck --help``; beside them, on the first install's home,
Hermes' own one-shot ``session_search`` process (``tools.session_search_tool.session_search``
of the installed hermes-agent), ``hermesd --snapshot --snapshot-format json`` and the floor
``python -c pass``. Reported: the median wall time and the median CPU time (user + system of the
child, ``getrusage``) of each, with the load average at the start of the first and the last
round. On a shared machine, compare the ratios inside one run.

Before the rounds each install runs ``status --json`` once (a later process is what is measured:
memdeck.db holds the compaction tracks) and its bytecode is compiled.
"""

from __future__ import annotations

import argparse
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SESSION_SEARCH = r'''
import json, sys
from pathlib import Path
from hermes_state import SessionDB
from tools.session_search_tool import session_search
out = json.loads(session_search(query=sys.argv[2], db=SessionDB(Path(sys.argv[1]))))
print(len(out.get("results") or out.get("sessions") or []))
'''


def _load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def _run(argv: list[str], env: dict) -> tuple[float, float, int]:
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    p = subprocess.run(argv, env=env, capture_output=True, timeout=600)
    w = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return w, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), p.returncode


def _rare_word(home: Path) -> str:
    ro = sqlite3.connect(f"file:{home / 'state.db'}?mode=ro", uri=True)
    try:
        n = ro.execute("SELECT COUNT(*) FROM messages WHERE content LIKE 'rare identifier ZX%'").fetchone()[0]
        row = ro.execute("SELECT content FROM messages WHERE content LIKE 'rare identifier ZX%' ORDER BY id "
                         "LIMIT 1 OFFSET ?", (max(0, n // 2),)).fetchone()
    finally:
        ro.close()
    return row[0].split()[2] if row else "kubernetes"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--install", action="append", required=True, metavar="LABEL=PYTHON=HOME")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--hermesd", default=os.environ.get("HERMESD"))
    ap.add_argument("--out")
    args = ap.parse_args()
    installs = [tuple(i.split("=", 2)) for i in args.install]
    base = dict(os.environ)
    base.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: bytecode cached
    first_home = Path(installs[0][2])
    rare = _rare_word(first_home)
    cmds: dict[str, tuple[list[str], dict]] = {}
    for label, python, home in installs:
        env = {**base, "HERMES_HOME": home}
        where = subprocess.run([python, "-c", "import memdeck.core as c, memdeck.tui as t; print(c.__path__[0]); "
                                "print(t.__path__[0])"], env=env, capture_output=True, text=True).stdout.split()
        subprocess.run([python, "-m", "compileall", "-q", *where], env=env, capture_output=True)
        subprocess.run([python, "-m", "memdeck.tui", "status", "--json"], env=env, capture_output=True)
        cmds[f"{label}: status --json"] = ([python, "-m", "memdeck.tui", "status", "--json"], env)
        cmds[f"{label}: recall RARE --json"] = ([python, "-m", "memdeck.tui", "recall", rare, "--json"], env)
        cmds[f"{label}: --help"] = ([python, "-m", "memdeck.tui", "--help"], env)
    env0 = {**base, "HERMES_HOME": str(first_home)}
    cmds["Hermes' one-shot session_search"] = ([sys.executable, "-c", SESSION_SEARCH, str(first_home / "state.db"), rare], env0)
    if args.hermesd:
        cmds["hermesd --snapshot --snapshot-format json"] = (
            [args.hermesd, "--hermes-home", str(first_home), "--snapshot", "--snapshot-format", "json"], env0)
    cmds["floor: python -c pass"] = ([sys.executable, "-c", "pass"], env0)
    walls: dict[str, list[float]] = {k: [] for k in cmds}
    cpus: dict[str, list[float]] = {k: [] for k in cmds}
    rcs: dict[str, int] = {k: 0 for k in cmds}
    loads = []
    for _ in range(args.rounds):
        loads.append(_load())
        for k, (argv, env) in cmds.items():
            w, c, rc = _run(argv, env)
            walls[k].append(w)
            cpus[k].append(c)
            rcs[k] = rcs[k] or rc
    lines = [f"# One-shot processes (bench/bench_oneshot.py, {args.rounds} interleaved rounds, home "
             f"`{first_home.name}`, rare word {rare}, load {loads[0]} at the first round, {loads[-1]} at the last)", "",
             "| process | wall, median | CPU, median | exit |", "|---|---|---|---|"]
    for k in cmds:
        lines.append(f"| {k} | {statistics.median(walls[k]) * 1000:.0f} ms | {statistics.median(cpus[k]) * 1000:.0f} ms "
                     f"| {rcs[k]} |")
    hermes = "Hermes' one-shot session_search"
    for label, _python, _home in installs:
        k = f"{label}: recall RARE --json"
        lines.append(f"| {label}: recall / Hermes' one-shot | {statistics.median(walls[k]) / statistics.median(walls[hermes]):.2f} "
                     f"| {statistics.median(cpus[k]) / statistics.median(cpus[hermes]):.2f} | |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
