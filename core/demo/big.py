"""Big demo homes for benchmarks: the demo home plus many older sessions (``build_big_home``)."""

from __future__ import annotations

import os
import random
from datetime import UTC, datetime

from ..home import HermesHome
from ..sessions import hermes_schema as hs
from .build import build_demo_home
from .plan import demo_plan
from .story import DEMO_SEED

# ── big homes for benchmarks ───────────────────────────────────────────────

_BIG_USER = (
    "Can you check why the {x} job is slow on staging?",
    "Add a test for the {x} edge case we talked about.",
    "What does the {x} setting do in production?",
    "Refactor the {x} module so the handler stays small.",
)
_BIG_ASSISTANT = (
    "I looked at the {x} path: most of the time goes to one query without an index. I added the index "
    "and the job now takes a third of the time.",
    "Added a test for {x}; it failed before the fix and passes now. The full suite is green.",
    "The {x} setting caps the batch size; production uses 500, staging 50.",
    "Split {x} into a parser and a writer; the handler is now twelve lines and easier to test.",
)
_BIG_TOPICS = ("redirect", "analytics", "cleanup", "qr", "ratelimit", "billing", "export", "auth", "webhook", "search")


def build_big_home(path: str | os.PathLike[str], messages: int = 1_000_000, *, seed: int = DEMO_SEED,
                   now: float | None = None, per_session: int = 1000, fts: bool = True) -> HermesHome:
    """The demo home plus ``messages`` extra rows in older sessions (for benchmarks).

    The extra sessions (``per_session`` messages each, alternating user/assistant, epoch-second
    timestamps going back in time) are inserted with ``executemany`` in one transaction, with
    the FTS5 triggers dropped; with ``fts`` the new rows are then indexed in one statement per
    FTS table (the triggers' document text), else the FTS tables lack them (faster, for
    benches that do not search). The triggers are restored either way.

    Returns:
        the :class:`HermesHome`; its live session is still the demo's.
    """
    home = build_demo_home(path, seed=seed, now=now)
    plan = demo_plan(seed, now)
    rng = random.Random(seed ^ 0x5EED)
    conn = hs.create_state_db(home.state_db)
    conn.execute("PRAGMA synchronous=OFF")
    try:
        # Bulk load without the per-row FTS triggers; index the new rows in one statement per
        # FTS table afterwards (same document text as the triggers), then restore the triggers.
        for stem in ("messages_fts", "messages_fts_trigram"):
            for kind in ("insert", "delete", "update"):
                conn.execute(f"DROP TRIGGER IF EXISTS {stem}_{kind}")
        first_new = int(conn.execute("SELECT COALESCE(MAX(id), 0) FROM messages").fetchone()[0]) + 1
        n_sessions = max(1, -(-messages // per_session))
        base = plan.now - 10 * 86400
        conn.execute("BEGIN")
        sids = []
        for s in range(n_sessions):
            started = base - (n_sessions - s) * 3600.0
            sid = datetime.fromtimestamp(started, tz=UTC).strftime("%Y%m%d_%H%M%S") + f"_{rng.getrandbits(24):06x}"
            sids.append((sid, started))
            conn.execute("INSERT INTO sessions (id, source, title, started_at, ended_at, end_reason, model) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?)",
                         (sid, "cli" if s % 5 else "telegram", f"history {s:05d}", started, started + 3000.0,
                          "cli_close", "anthropic/claude-sonnet-4.5"))
        conn.execute("COMMIT")

        def rows():
            left = messages
            for sid, started in sids:
                k = min(per_session, left)
                for i in range(k):
                    topic = _BIG_TOPICS[(i // 2 + len(sid)) % len(_BIG_TOPICS)]
                    pool = _BIG_USER if i % 2 == 0 else _BIG_ASSISTANT
                    yield (sid, "user" if i % 2 == 0 else "assistant",
                           pool[(i // 2) % len(pool)].format(x=topic), started + i * 2.5)
                left -= k
                if left <= 0:
                    return

        hs.append_many(conn, rows())
        if fts:
            doc = "COALESCE(content, '') || ' ' || COALESCE(tool_name, '') || ' ' || COALESCE(tool_calls, '')"
            conn.execute("BEGIN")
            for table in ("messages_fts", "messages_fts_trigram"):
                conn.execute(f"INSERT INTO {table}(rowid, content) SELECT id, {doc} FROM messages WHERE id >= ?",
                             (first_new,))
            conn.execute("COMMIT")
        conn.executescript(hs.FTS_SQL)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return home
