"""A big Hermes home of the real long-lived shape, written by Hermes' OWN code (issue 9).

    python bench/bighome.py [N] [--root DIR]   # N live-session rows (default 200,000); prints the home's path

Unlike bench/bighome_core.py (memdeck's Hermes-shaped writer), every row here goes through
hermes-agent 0.19.0's ``hermes_state.SessionDB`` (``create_session``, ``append_message``,
``archive_and_compact``, ``end_session``) and the memory files through
``tools.memory_tool.MemoryStore`` with ``HERMES_HOME`` set, so the schema, the FTS triggers,
the WAL and every per-row transaction are Hermes'. The home:

* ``config.yaml`` from memdeck's demo (memory limits, ``memlock:`` with two static anchors);
* ``memories/MEMORY.md`` + ``USER.md``: the demo's entries re-added one by one through
  ``MemoryStore.add`` (Hermes' own format: entries joined by ``\\n§\\n``);
* the real long-lived shape (generator 2, issue 23): first, at the lowest row ids, the home's
  history: 5 short ended sessions (``end_session(..., "cli_close")``, a few dozen rows each),
  then :data:`OLDER` older sessions holding 40 % of ``N``, each compacted in place every
  ``min(800, rows/3)`` active rows and ended; every second one also rotates once half-way
  (``end_session(sid, "compression")``, ``create_session(child, parent_session_id=sid)`` and
  the head + summary + tail appended to the child, as Hermes 0.19's
  ``agent/conversation_compression.py:1240-1290`` does), the child going on and being
  compacted in place too before it ends; then the ONE live session with the rest of the rows:
  a user turn, an assistant reply, and about one turn in five an assistant ``tool_calls``
  message plus its ``tool`` result; every ~800 active rows an in-place compaction
  ``archive_and_compact(sid, head + [summary] + tail)``: the first 3 active rows (the
  protected head, protect_first_n 3), an assistant message starting with
  ``agent.context_compressor.SUMMARY_PREFIX`` plus a summary, then the last ~20 rows (the tail
  never starts with an orphan ``tool`` row);
* ``profiles/work/`` with its own state.db (one short ended session, then one older session
  compacted in place and ended) and memory files;
* MemLock files: the demo's ``memlock/persist/`` global pin, and ``memlock/<sid>.json`` for
  the live session in the demo's shape (MemLock 0.5: anchors map, static ids, drift_log of the
  last 20 audits, ``self_sha256``): the two static anchors from config plus three pins; the
  probe words of two of them appear in every third summary, the third pin's never (it drifts).

Queries the recall benchmark relies on: rare identifiers ``ZX<7 digits>Q`` (one every 997
rows), the common word ``kubernetes``, the phrase ``grafana prometheus``, the CJK strings of
``CJK``, the prefix ``kubern*`` and the no-hit word ``xylophonequasar``.

Cached under ``$MEMDECK_BENCH_HOMES`` (default ``~/.cache/memdeck-bench``) as ``hermes-<N>-g<GENERATOR>/`` (``.built`` marks a finished
build, with its row count, compaction count and the seconds it took). Build speed is Hermes':
one write transaction per ``append_message``; ``--rate`` builds 20,000 rows in a temp dir and
prints rows/s to decide whether 1M fits in 15 minutes.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GENERATOR = 2  # bump when the shape changes: caches are keyed by it
CACHE = Path(os.environ.get("MEMDECK_BENCH_HOMES") or Path.home() / ".cache" / "memdeck-bench")
OLDER = 6  # older sessions (compacted, ended) below the live one
OLDER_SHARE = 0.4  # of the rows
EVERY = 800  # active rows between compactions
HEAD, TAIL = 3, 20
WORDS = [
    "kubernetes", "deploy", "rollout", "grafana", "prometheus", "invoice", "budget", "travel", "paris", "python", "rust",
    "async", "database", "index", "vacuum", "migration", "schema", "memory", "summary", "session", "profile", "cron",
    "telegram", "discord", "slack", "weather", "garden", "recipe", "bread", "yeast", "flour", "guitar", "chord", "tempo",
    "marathon", "training", "interval", "the", "and", "of", "to", "in", "is", "it", "that", "for", "on", "with", "as",
]
CJK = ("東京の天気", "データベース移行", "会議の議事録", "机器学习模型", "部署回滚")
NO_HIT = "xylophonequasar"
# pins added on the live session (MemLock record shape; probes lower-case, as guard_pin stores them)
PINS = (
    ("pin_b16e0001", "Deploys go through the staging cluster first.", ["staging cluster", "staging"], 70),
    ("pin_b16e0002", "Invoices are in EUR, never USD.", ["eur", "invoices"], 50),
    ("pin_b16e0003", "Never run migrations on Fridays.", ["fridays", "friday"], 90),  # never in a summary
)


def home_path(n: int) -> Path:
    return CACHE / f"hermes-{n}-g{GENERATOR}"


def _text(rnd: random.Random, k: int) -> str:
    return " ".join(rnd.choice(WORDS) for _ in range(k))


def _hermes(home: Path):
    """Import Hermes' modules with HERMES_HOME pointing at ``home``."""
    os.environ["HERMES_HOME"] = str(home)
    from agent.context_compressor import SUMMARY_PREFIX
    from hermes_state import SessionDB
    from tools.memory_tool import MemoryStore
    return SessionDB, MemoryStore, SUMMARY_PREFIX


def _write_memory(home: Path, memory: list[str], user: list[str]) -> None:
    _, MemoryStore, _ = _hermes(home)
    (home / "memories").mkdir(parents=True, exist_ok=True)
    store = MemoryStore()
    store.load_from_disk()
    for target, entries in (("memory", memory), ("user", user)):
        for e in entries:
            store.add(target, e)  # an entry Hermes refuses (the demo has a blocked one) is left out


def _entries(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    return [e.strip() for e in text.split("\n§\n") if e.strip()]


def _other_sessions(db, rnd: random.Random, t: float, count: int = 5, rows: int = 40) -> None:
    for i in range(count):
        sid = time.strftime("%Y%m%d_%H%M%S_", time.gmtime(t + i * 3600)) + f"{rnd.getrandbits(24):06x}"
        db.create_session(sid, source="cli" if i % 2 else "telegram")
        for j in range(rows):
            db.append_message(sid, "user" if j % 2 == 0 else "assistant", _text(rnd, rnd.randint(6, 40)),
                              timestamp=t + i * 3600 + j * 5)
        db.end_session(sid, "cli_close")


def _sid(rnd: random.Random, t: float) -> str:
    """A Hermes session id (``YYYYMMDD_HHMMSS_<6 hex>``, agent/agent_init.py:1279-1281)."""
    return time.strftime("%Y%m%d_%H%M%S_", time.gmtime(t)) + f"{rnd.getrandbits(24):06x}"


def _open(SessionDB, path: Path):
    """Hermes' ``SessionDB`` on ``path``, its connection without fsync (a bench home is rebuilt
    when lost; every row still goes through ``append_message``'s own transaction), and its FTS
    merge (``optimize_fts``, every 1,000 writes in Hermes 0.19: 72 % of a build's time, growing
    with the index) every 50,000 writes."""
    db = SessionDB(path)
    db._conn.execute("PRAGMA synchronous=OFF")
    db._OPTIMIZE_EVERY_N_WRITES = 50_000
    return db


class _Writer:
    """Writes conversations through one ``SessionDB`` the way a Hermes agent does (see module doc)."""

    def __init__(self, db, rnd: random.Random, summary_prefix: str, t: float, progress: bool = False) -> None:
        self.db, self.rnd, self.prefix, self.t, self.progress = db, rnd, summary_prefix, t, progress
        self.written = self.compactions = self.rotations = 0
        self.summaries: dict[str, list[tuple[float, str]]] = {}
        self.t0 = time.perf_counter()

    def conversation(self, sid: str, rows: int, *, every: int, end: str | None, rotate_at: int | None = None) -> None:
        """``rows`` rows in ``sid`` (and its rotation child), compacted every ``every`` active rows;
        ended with ``end`` unless None (the live session)."""
        db, rnd = self.db, self.rnd
        db.create_session(sid, source="cli")
        active: list[dict] = []
        goal = self.written + rows
        turn = 0

        def add(role: str, content: str | None, **kw) -> None:
            self.t += 1.5
            db.append_message(sid, role, content, timestamp=self.t, **kw)
            active.append({"role": role, "content": content, **kw})
            self.written += 1

        def compacted() -> list[dict]:
            self.compactions += 1
            body = f"## Goal\nbench compaction {self.compactions}: {_text(rnd, 60)}"
            if self.compactions % 3 == 0:  # the probes of two anchors survive in every third summary
                body += "\n## Constraints\nBritish English, colour; pathlib; staging cluster; EUR invoices."
            start = len(active) - TAIL
            while start > HEAD and active[start]["role"] == "tool":
                start -= 1
            self.t += 1.0
            self.summaries.setdefault(sid, []).append((self.t, body))
            return active[:HEAD] + [{"role": "assistant", "content": self.prefix + "\n" + body}] + active[start:]

        while self.written < goal:
            turn += 1
            w = self.written
            if w // 997 != (w + 4) // 997:
                add("user", f"rare identifier ZX{w:07d}Q and {rnd.choice(CJK)} {_text(rnd, 8)}")
            else:
                add("user", _text(rnd, rnd.randint(5, 30)))
            if turn % 5 == 0:
                cid = f"call_{w:08x}"
                add("assistant", None, tool_calls=[{"id": cid, "type": "function", "function": {
                    "name": "terminal", "arguments": json.dumps({"command": f"kubectl get pods -n ns{turn % 17}"})}}])
                add("tool", _text(rnd, rnd.randint(10, 200)), tool_name="terminal", tool_call_id=cid)
            add("assistant", _text(rnd, rnd.randint(20, 120)))
            if rotate_at is not None and self.written - (goal - rows) >= rotate_at and len(active) > HEAD + TAIL:
                # rotation (conversation_compression.py:1240-1290): the parent ends 'compression', a
                # child starts with the parent as parent_session_id, the handoff is appended to it
                handoff = compacted()
                db.end_session(sid, "compression")
                parent, sid = sid, _sid(rnd, self.t)
                db.create_session(sid, source="cli", parent_session_id=parent)
                active = []
                for m in handoff:
                    add(m["role"], m["content"], **{k: v for k, v in m.items() if k not in ("role", "content")})
                self.rotations += 1
                rotate_at = None
            elif len(active) >= every:
                new = compacted()
                db.archive_and_compact(sid, new)
                active = new
            if self.progress and self.written % 20000 < 4:
                print(f"  {self.written:,} rows, {self.compactions} compactions, "
                      f"{self.written / (time.perf_counter() - self.t0):,.0f} rows/s", file=sys.stderr, flush=True)
        if end is not None:
            db.end_session(sid, end)
        self.last_sid = sid


def build(n: int, *, root: Path | None = None, seed: int = 9, progress: bool = False) -> Path:
    """Build (or reuse) the home with ``n`` live-session rows; returns its path.

    Memory entries Hermes refuses (the demo keeps one that its threat scan blocks) are left out.
    """
    root = root or home_path(n)
    if (root / ".built").exists():
        return root
    if root.exists():
        shutil.rmtree(root)
    t_build = time.perf_counter()
    from memdeck.core.anchors.files import safe_sid
    from memdeck.core.anchors.model import anchors_sha256, dump_json
    from memdeck.core.demo import build_demo_home

    # config.yaml, memory entries and the global pin from the demo; everything else is rewritten.
    build_demo_home(root)
    memory, user = _entries(root / "memories" / "MEMORY.md"), _entries(root / "memories" / "USER.md")
    for p in ("state.db", "state.db-wal", "state.db-shm", "pending", ".memdeck-demo", "memories"):
        q = root / p
        shutil.rmtree(q) if q.is_dir() else q.unlink(missing_ok=True)
    for f in (root / "memlock").glob("*.json"):
        f.unlink()
    _write_memory(root, memory, user)

    rnd = random.Random(seed)
    t = time.time() - n * 6.0 - 30 * 86400
    # the second profile: its own state.db (a short session, then a compacted older one) and memory files
    work = root / "profiles" / "work"
    work.mkdir(parents=True)
    (work / "config.yaml").write_text((root / "config.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    _write_memory(work, ["Work profile: the on-call rota is in the shared calendar."],
                  ["Works on the payments team."])
    SessionDB, _, SUMMARY_PREFIX = _hermes(work)
    wdb = _open(SessionDB, work / "state.db")
    _other_sessions(wdb, rnd, t, count=1, rows=30)
    w = _Writer(wdb, rnd, SUMMARY_PREFIX, t + 7200)
    w.conversation(_sid(rnd, w.t), min(2_000, max(300, n // 100)), every=min(EVERY, max(60, n // 300)), end="cli_close")
    wdb.close()

    SessionDB, _, SUMMARY_PREFIX = _hermes(root)
    db = _open(SessionDB, root / "state.db")
    _other_sessions(db, rnd, t)
    w = _Writer(db, rnd, SUMMARY_PREFIX, t + 6 * 3600, progress=progress)
    per = int(n * OLDER_SHARE) // OLDER
    older = []
    for k in range(OLDER):  # the long-lived history: compacted, some rotated, ended, at the lowest ids
        w.t += 3600.0
        sid = _sid(rnd, w.t)
        older.append(sid)
        w.conversation(sid, per, every=min(EVERY, max(60, per // 3)), end="cli_close" if k % 3 else "new_session",
                       rotate_at=per // 2 if k % 2 else None)
    w.t += 3600.0
    sid = _sid(rnd, w.t)
    w.conversation(sid, n - w.written, every=EVERY, end=None)  # the live session
    summaries, t, written, compactions = w.summaries.get(sid, []), w.t, w.written, w.compactions
    db.close()
    for old, marks in w.summaries.items():  # MemLock kept a record for every compacted older session too
        if old != sid:
            _write_memlock(root, old, marks, marks[-1][0], anchors_sha256, dump_json, safe_sid)

    _write_memlock(root, sid, summaries, t, anchors_sha256, dump_json, safe_sid)
    for side in ("-wal", "-shm"):  # Hermes' connection is closed: leave a quiet home
        Path(str(root / "state.db") + side).unlink(missing_ok=True)
        Path(str(work / "state.db") + side).unlink(missing_ok=True)
    secs = time.perf_counter() - t_build
    (root / ".built").write_text(json.dumps({"rows": written, "compactions": compactions, "live_session": sid,
                                             "older_sessions": older, "rotations": w.rotations,
                                             "live_compactions": len(summaries),
                                             "seconds": round(secs, 1), "generator": GENERATOR}) + "\n")
    return root


def _write_memlock(root: Path, sid: str, summaries: list[tuple[float, str]], now: float,
                   anchors_sha256, dump_json, safe_sid) -> None:
    """memlock/<safe sid>.json in the demo's (MemLock 0.5) shape; reference memlock.md §1.2."""
    import hashlib

    import yaml
    cfg = yaml.safe_load((root / "config.yaml").read_text(encoding="utf-8"))
    anchors: dict[str, dict] = {}
    for a in cfg["memlock"]["anchors"]:
        anchors[a["id"]] = {"id": a["id"], "text": a["text"], "reminder": a["reminder"], "priority": a["priority"],
                            "probes": [p.lower() for p in a["probes"]], "pinned": False, "drifted": False,
                            "last_alive_turn": 1}
    for aid, text, probes, prio in PINS:
        anchors[aid] = {"id": aid, "text": text, "reminder": text.rstrip("."), "priority": prio, "probes": probes,
                        "pinned": True, "drifted": aid == "pin_b16e0003", "last_alive_turn": 1,
                        "scope": "session", "created_at": now - len(summaries) * 60.0}
    log = [{"time": ts, "score": 100 if i % 3 == 2 else 40,
            "casualties": [] if i % 3 == 2 else ["pin_b16e0001", "pin_b16e0002", "pin_b16e0003"]}
           for i, (ts, _) in enumerate(summaries)][-20:]
    last_hash = hashlib.sha256(summaries[-1][1].encode("utf-8")).hexdigest() if summaries else None
    store = {
        "session_id": sid, "anchors": anchors, "static_anchor_ids": [a["id"] for a in cfg["memlock"]["anchors"]],
        "pinned_count": sum(1 for a in anchors.values() if a["pinned"]), "last_summary_hash": last_hash,
        "last_compaction_at": summaries[-1][0] if summaries else None,
        "integrity_score": log[-1]["score"] if log else None, "drift_log": log,
        "last_alert_at": None, "last_reinject_turn": 0, "turn_count": len(summaries) * 300,
        "self_sha256": anchors_sha256(anchors),
    }
    (root / "memlock").mkdir(exist_ok=True)
    (root / "memlock" / f"{safe_sid(sid)}.json").write_text(dump_json(store), encoding="utf-8")


def main() -> int:
    args = sys.argv[1:]
    if args and args[0] == "--rate":
        tmp = Path(tempfile.mkdtemp(prefix="memdeck-bighome-rate-"))
        t = time.perf_counter()
        build(20_000, root=tmp / "home", progress=True)
        secs = time.perf_counter() - t
        info = json.loads((tmp / "home" / ".built").read_text())
        print(f"20,000 rows, {info['compactions']} compactions in {secs:.1f} s: {20_000 / secs:,.0f} rows/s; "
              f"1M would take ~{1_000_000 / (20_000 / secs) / 60:.0f} min")
        shutil.rmtree(tmp)
        return 0
    root = None
    if "--root" in args:  # build (or reuse) the home in DIR instead of the cache, e.g. /work/benchhomes/...
        i = args.index("--root")
        root = Path(args[i + 1])
        del args[i:i + 2]
    n = int(args[0]) if args else 200_000
    t = time.perf_counter()
    path = build(n, root=root, progress=True)
    print(path, f"({time.perf_counter() - t:.1f} s)", (path / ".built").read_text().strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
