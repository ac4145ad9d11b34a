"""What one external memory change writes into memdeck.db (issue 23, gap 4), page by page.

    python bench/bench_history_bytes.py [--changes 20] [--history 500] [--compare PYTHON ...]

A home (a copy of the demo home) gets ``--history`` earlier changes, then ``--changes`` external
memory changes, each one Hermes 0.19's own ``MemoryStore.replace`` (the agent's memory tool) followed
by the observation every memdeck process runs when a watched file's stamp changed
(``core/history/observation.py`` ``observe``, what the dashboard's refresh calls). Before each
change the WAL is checkpointed empty (``PRAGMA wal_checkpoint(TRUNCATE)``); after it the WAL's
frames are read (``core/sqlite_files.py`` ``raw_fd``, the one raw path to an SQLite file) and each
frame's page is named through the ``dbstat`` virtual table (the table or index holding it, or
the freelist/sqlite_sequence/schema). Reported per change: WAL frames and bytes (each frame is a
24-byte header and a page), the distinct pages the checkpoint then writes into the db file, the
process's ``write_bytes`` (``/proc/self/io``: what reached the disk, the WAL and the checkpoint),
and the pages per table/index.

``--compare PYTHON`` runs the same measurement with another interpreter (another memdeck install,
e.g. the commit before a change) on its own copy of the home, in the same run, so the table shows
before and after side by side. Prints a Markdown table; ``--out`` writes it too.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def _write_bytes() -> int:
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("write_bytes:"):
            return int(line.split()[1])
    return 0


def _wal_frames(wal: Path, page_size: int) -> list[int]:
    """Page numbers of the WAL's valid frames (salts equal to the header's), in order."""
    from memdeck.core.sqlite_files import raw_fd

    if not wal.exists():
        return []
    with raw_fd(wal) as fd:
        size = os.fstat(fd).st_size
        data = os.pread(fd, size, 0)
    if len(data) < 32:
        return []
    salt = data[16:24]
    out, off, step = [], 32, 24 + page_size
    while off + step <= len(data):
        pgno = struct.unpack(">I", data[off:off + 4])[0]
        if data[off + 8:off + 16] != salt:
            break
        out.append(pgno)
        off += step
    return out


def worker(home: Path, changes: int, history: int) -> dict:
    """Measure in this interpreter (whatever memdeck it imports) on ``home``; returns the figures."""

    os.environ["HERMES_HOME"] = str(home)
    from tools.memory_tool import MemoryStore  # Hermes 0.19's own memory tool

    from memdeck.core.deck import db as deckdb
    from memdeck.core.history.observation import observe
    from memdeck.core.home import resolve_home

    h = resolve_home(str(home), None)
    observe(h)  # baseline (memdeck.db created, files seen)
    store = MemoryStore()
    store.load_from_disk()
    marker = f"History bench marker {os.getpid()}"
    r = store.add("memory", marker)
    assert r.get("success"), r
    current = marker

    def change(i: int) -> None:
        nonlocal current
        new = f"{marker} {'x' * (i % 37 + 1)} #{i}"
        res = store.replace("memory", current, new)
        assert res.get("success"), res
        current = new

    for i in range(history):  # earlier history: the tables have the depth of a home used for a while
        change(i)
        observe(h)
    conn = deckdb.connect(h)
    page_size = int(conn.execute("PRAGMA page_size").fetchone()[0])
    wal = deckdb.db_path(h).with_name(deckdb.db_path(h).name + "-wal")
    per: list[dict] = []
    names_total: Counter[str] = Counter()
    for i in range(history, history + changes):
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        change(i)
        wb0 = _write_bytes()
        got = observe(h)
        assert got, "the change was not recorded"
        frames = _wal_frames(wal, page_size)
        wb_observe = _write_bytes() - wb0
        # name each page (dbstat: the b-tree holding it; page 1 is the schema)
        owner = {int(r[1]): str(r[0]) for r in conn.execute("SELECT name, pageno FROM dbstat")}
        names = Counter(owner.get(p, "freelist/other") for p in frames)
        wb1 = _write_bytes()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        wb_ckpt = _write_bytes() - wb1
        names_total.update(names)
        per.append({"frames": len(frames), "distinct": len(set(frames)), "write_observe": wb_observe,
                    "write_checkpoint": wb_ckpt, "pages": dict(names)})
    rows = conn.execute("SELECT COUNT(*) FROM history").fetchone()[0]
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    seen_bytes = conn.execute("SELECT SUM(length(content)) FROM history_seen").fetchone()[0]
    conn.close()
    n = len(per)
    return {
        "schema": version, "page_size": page_size, "history_rows": rows, "history_seen_bytes": seen_bytes,
        "changes": n,
        "wal_frames": sum(p["frames"] for p in per) / n,
        "wal_bytes": sum(p["frames"] for p in per) * (24 + page_size) / n,
        "checkpoint_pages": sum(p["distinct"] for p in per) / n,
        "checkpoint_bytes": sum(p["distinct"] for p in per) * page_size / n,
        "write_bytes_observe": sum(p["write_observe"] for p in per) / n,
        "write_bytes_checkpoint": sum(p["write_checkpoint"] for p in per) / n,
        "pages": {k: v / n for k, v in names_total.most_common()},
    }


def _run(python: str, home: Path, changes: int, history: int) -> dict:
    env = {**os.environ, "HERMES_HOME": str(home)}
    p = subprocess.run([python, str(Path(__file__).resolve()), "--worker", str(home), "--changes", str(changes),
                        "--history", str(history)], env=env, capture_output=True, text=True, timeout=3600)
    if p.returncode != 0:
        raise SystemExit(f"{python}: {p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def _kb(b: float) -> str:
    return f"{b / 1024:.1f} KB"


def table(results: list[tuple[str, dict, str]]) -> str:
    lines = ["| measure (per external memory change) | " + " | ".join(label for label, _, _ in results) + " |",
             "|---|" + "---|" * len(results)]

    def row(name: str, f) -> None:
        lines.append(f"| {name} | " + " | ".join(f(r) for _, r, _ in results) + " |")

    row("machine load (1 min) at start", lambda r: next(ld for lb, rr, ld in results if rr is r))
    row("memdeck.db schema version / page size", lambda r: f"{r['schema']} / {r['page_size']} B")
    row("history rows / history_seen content", lambda r: f"{r['history_rows']} / {r['history_seen_bytes']:,} B")
    row("WAL frames written by the observation", lambda r: f"{r['wal_frames']:.1f}")
    row("WAL bytes (frames x (24 + page size))", lambda r: _kb(r["wal_bytes"]))
    row("pages the checkpoint writes into memdeck.db", lambda r: f"{r['checkpoint_pages']:.1f} ({_kb(r['checkpoint_bytes'])})")
    row("WAL + checkpoint bytes", lambda r: _kb(r["wal_bytes"] + r["checkpoint_bytes"]))
    row("disk write_bytes: observation / checkpoint", lambda r: f"{_kb(r['write_bytes_observe'])} / {_kb(r['write_bytes_checkpoint'])}")
    names = sorted({k for _, r, _ in results for k in r["pages"]})
    for k in names:
        row(f"  pages of `{k}`", lambda r, k=k: f"{r['pages'].get(k, 0):.1f}")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--changes", type=int, default=20)
    ap.add_argument("--history", type=int, default=500, help="earlier changes before the measured ones")
    ap.add_argument("--compare", action="append", default=[], metavar="LABEL=PYTHON",
                    help="also measure with another interpreter's memdeck (e.g. before=/path/venv/bin/python)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(Path(args.worker), args.changes, args.history)))
        return 0
    sys.path.insert(0, str(ROOT))
    from memdeck.core.demo import build_demo_home

    tmp = Path(tempfile.mkdtemp(prefix="memdeck-histbytes-"))
    try:
        src = build_demo_home(tmp / "src").path
        shutil.rmtree(src / "memdeck", ignore_errors=True)
        runs = [(c.split("=", 1)[0], c.split("=", 1)[1]) for c in args.compare] + [("this memdeck", sys.executable)]
        results = []
        for label, python in runs:
            home = tmp / label.replace(" ", "_")
            shutil.copytree(src, home)
            ld = _load()
            t = time.perf_counter()
            results.append((label, _run(python, home, args.changes, args.history), ld))
            print(f"{label}: {time.perf_counter() - t:.1f} s", file=sys.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    text = (f"# memdeck.db bytes per external memory change (bench/bench_history_bytes.py --changes {args.changes} "
            f"--history {args.history})\n\n" + table(results) + "\n")
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
