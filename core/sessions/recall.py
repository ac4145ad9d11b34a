"""Recall: what Hermes' ``session_search`` returns for a query, reproduced from its 0.19 source.

One concept: :func:`recall` is what ``session_search`` in discover mode returns
(``tools/session_search_tool.py`` ``_discover`` :499-616 over ``hermes_state.search_messages``
:5443-5762): FTS5 over ``messages_fts`` with Hermes' query sanitiser
(:func:`sanitize_fts5_query`), the trigram table for CJK, a ``LIKE`` fallback,
compaction-archived rows included, rewound rows hidden, cron demoted, hits grouped by lineage
root, ``>>>``/``<<<`` snippets, context and a window of messages around each hit.
:func:`iter_recall` yields the same hits newest first, in pages, for a dashboard.

The ``<memory-context>`` fence recalled text gets is :mod:`memdeck.core.memory.context_fence`;
the frozen system-prompt memory block is :mod:`memdeck.core.memory.prompt_block`.

All read-only; nothing here raises for a bad database.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..memory.context_fence import sanitize_context
from .compaction import decode_content
from .statedb import StateDB

#: Hermes ``MAX_FTS5_QUERY_CHARS`` (hermes_state.py:160).
MAX_FTS5_QUERY_CHARS = 2048
#: ``session_search`` defaults (tools/session_search_tool.py:40, :50, :56).
HIDDEN_SESSION_SOURCES = ("subagent", "tool")
DEMOTED_SESSION_SOURCES = ("cron",)
DISCOVER_SCAN_LIMIT = 300

_OPS = {"AND", "OR", "NOT"}


# --------------------------------------------------------------------------- query sanitiser


def sanitize_fts5_query(query: str) -> str:
    """Make arbitrary user text safe for ``messages_fts MATCH``.

    Reproduces Hermes 0.19 ``SessionDB._sanitize_fts5_query`` (hermes_state.py:5334-5411):
    cap at 2048 chars; keep balanced ``"phrases"``, blank unmatched quotes; replace
    ``+ { } ( ) : " ^`` with spaces; collapse ``*`` runs and drop a leading ``*``; drop a
    dangling AND/OR/NOT at either end; quote terms joined by ``.``, ``-`` or ``_``
    (``chat-send`` -> ``"chat-send"``). Never raises (str input).
    """
    query = str(query)[:MAX_FTS5_QUERY_CHARS]
    quoted: list[str] = []
    pieces: list[str] = []
    i = 0
    n = len(query)
    while i < n:
        ch = query[i]
        if ch != '"':
            pieces.append(ch)
            i += 1
            continue
        end = query.find('"', i + 1)
        if end == -1:
            pieces.append(" ")
            i += 1
            continue
        quoted.append(query[i:end + 1])
        pieces.append(f"\x00Q{len(quoted) - 1}\x00")
        i = end + 1
    s = "".join(pieces)
    s = re.sub(r'[+{}():"^]', " ", s)
    s = re.sub(r"\*+", "*", s)
    s = re.sub(r"(^|\s)\*", r"\1", s)
    s = re.sub(r"(?i)^(AND|OR|NOT)\b\s*", "", s.strip())
    s = re.sub(r"(?i)\s+(AND|OR|NOT)\s*$", "", s.strip())
    s = re.sub(r"\b(\w+(?:[._-]\w+)+)\b", r'"\1"', s)
    for k, q in enumerate(quoted):
        s = s.replace(f"\x00Q{k}\x00", q)
    return s.strip()


def _is_cjk(cp: int) -> bool:
    # hermes_state.py:5414-5422
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF or 0x3000 <= cp <= 0x303F
            or 0x3040 <= cp <= 0x309F or 0x30A0 <= cp <= 0x30FF or 0xAC00 <= cp <= 0xD7AF)


def count_cjk(text: str) -> int:
    """Number of CJK/kana/hangul code points (Hermes ``_count_cjk``)."""
    return sum(1 for ch in text if _is_cjk(ord(ch)))


# --------------------------------------------------------------------------- search_messages


def _preview(raw: Any) -> str:
    decoded = decode_content(raw)
    if isinstance(decoded, list):
        parts = [p.get("text", "") for p in decoded if isinstance(p, dict) and p.get("type") == "text"]
        text = " ".join(t for t in parts if t).strip()
        return text or "[multimodal content]"
    if isinstance(decoded, str):
        return decoded
    return ""


def search_messages(
    db: StateDB,
    query: str,
    *,
    role_filter: Sequence[str] | None = None,
    exclude_sources: Sequence[str] | None = None,
    source_filter: Sequence[str] | None = None,
    limit: int = 20,
    offset: int = 0,
    sort: str | None = None,
    with_context: bool = True,
) -> list[dict[str, Any]]:
    """Hermes ``search_messages`` over a read-only :class:`StateDB`; never raises.

    Returns dicts with ``id, session_id, role, snippet, timestamp, tool_name, source, model,
    session_started, compacted, context`` (``context``: previous, matched and next message of
    the session, ``{"role", "content"}`` with content cut to 200 chars), best first.

    Same SQL pipeline as hermes_state.py:5443-5762, with two deliberate differences: when
    ``messages_fts`` is missing we fall back to ``LIKE`` (Hermes returns nothing), and the
    ``LIKE`` path also hides rewound rows (Hermes' short-CJK ``LIKE`` path does not).
    """
    if not isinstance(query, str) or not query.strip():
        return []
    q = sanitize_fts5_query(query)
    if not q:
        return []
    sort_norm = sort.strip().lower() if isinstance(sort, str) else None
    order = {"newest": "ORDER BY m.timestamp DESC, rank", "oldest": "ORDER BY m.timestamp ASC, rank"}.get(sort_norm or "", "ORDER BY rank")

    def run(conn: sqlite3.Connection) -> list[dict[str, Any]]:
        mcols = _columns(conn, "messages")
        live = "(m.active = 1 OR m.compacted = 1)" if {"active", "compacted"} <= mcols else ("m.active = 1" if "active" in mcols else "1")
        compacted_col = "m.compacted" if "compacted" in mcols else "0"
        ts_col = "m.timestamp" if "timestamp" in mcols else "0.0"
        tool_col = "m.tool_name" if "tool_name" in mcols else "NULL"
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        filters: list[str] = []
        fparams: list[Any] = []
        if source_filter is not None:
            filters.append(f"s.source IN ({','.join('?' * len(source_filter))})")
            fparams += list(source_filter)
        if exclude_sources is not None:
            filters.append(f"s.source NOT IN ({','.join('?' * len(exclude_sources))})")
            fparams += list(exclude_sources)
        if role_filter:
            filters.append(f"m.role IN ({','.join('?' * len(role_filter))})")
            fparams += list(role_filter)
        select = (f"m.id, m.session_id, m.role, {{snip}} AS snippet, m.content, {ts_col}, {tool_col}, s.source, "
                  f"{'s.model' if 'model' in _columns(conn, 'sessions') else 'NULL'}, s.started_at, {compacted_col}")
        matches: list[tuple[Any, ...]] | None = None
        cjk = count_cjk(q) > 0
        if cjk:
            raw = q.strip('"').strip()
            toks = [t for t in raw.split() if t.upper() not in _OPS and count_cjk(t) > 0]
            short = any(count_cjk(t) < 3 for t in toks)
            if count_cjk(raw) >= 3 and not short and "messages_fts_trigram" in tables:
                parts = [t if t.upper() in _OPS else '"' + t.replace('"', '""') + '"' for t in raw.split()]
                sql = (f"SELECT {select.format(snip=_SNIPPET_TRI)} "
                       f"FROM messages_fts_trigram JOIN messages m ON m.id = messages_fts_trigram.rowid "
                       f"JOIN sessions s ON s.id = m.session_id WHERE messages_fts_trigram MATCH ? AND {live}"
                       + "".join(f" AND {f}" for f in filters) + f" {order} LIMIT ? OFFSET ?")
                try:
                    matches = [tuple(r) for r in conn.execute(sql, [" ".join(parts), *fparams, limit, offset])]
                except sqlite3.OperationalError:
                    matches = None
            if matches is None:
                words = [t for t in raw.split() if t.upper() not in _OPS] or [raw]
                matches = _like(conn, words, select, live, filters, fparams, limit, offset)
        elif "messages_fts" in tables:
            sql = (f"SELECT {select.format(snip=_SNIPPET)} FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid "
                   f"JOIN sessions s ON s.id = m.session_id WHERE messages_fts MATCH ? AND {live}"
                   + "".join(f" AND {f}" for f in filters) + f" {order} LIMIT ? OFFSET ?")
            try:
                matches = [tuple(r) for r in conn.execute(sql, [q, *fparams, limit, offset])]
            except sqlite3.OperationalError:
                return []
        else:
            toks = [t.strip('"') for t in q.split() if t.upper() not in _OPS and t.strip('"')] or [q]
            matches = _like(conn, toks, select, live, filters, fparams, limit, offset)
        out = []
        for r in matches:
            mid, sid, role, snippet, _content, ts, tool, source, model, started, compacted = r
            out.append({
                "id": mid, "session_id": sid, "role": role, "snippet": snippet if isinstance(snippet, str) else "",
                "timestamp": ts, "tool_name": tool, "source": source, "model": model, "session_started": started,
                "compacted": bool(compacted),
                "context": _context(conn, int(mid), ts_col != "0.0") if with_context else [],
            })
        return out

    return db.connection_for_reading()(run, [])


# Column -1 = the best-matching column, as Hermes 0.20+ (``hermes_state_search.py:1829``, 0.22
# ``:938``). On schema >= 23 messages_fts has three external-content columns (content,
# tool_name, tool_calls) and column 0 gives '' for a match in tool_calls; on the one-column
# inline FTS of 0.17-0.19 (``snippet(messages_fts, 0, ...)``, 0.19 ``hermes_state.py:5543``)
# -1 and 0 are the same column, so one expression serves every version.
_SNIPPET = "snippet(messages_fts, -1, '>>>', '<<<', '...', 40)"
_SNIPPET_TRI = "snippet(messages_fts_trigram, -1, '>>>', '<<<', '...', 40)"


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}


def _like(conn: sqlite3.Connection, tokens: list[str], select: str, live: str, filters: list[str], fparams: list[Any],
          limit: int, offset: int) -> list[tuple[Any, ...]]:
    mcols = _columns(conn, "messages")
    clauses, params = [], []
    for tok in tokens:
        esc = tok.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        cols = [c for c in ("content", "tool_name", "tool_calls") if c in mcols]
        clauses.append("(" + " OR ".join(f"m.{c} LIKE ? ESCAPE '\\'" for c in cols) + ")")
        params += [f"%{esc}%"] * len(cols)
    order = "ORDER BY m.timestamp DESC" if "timestamp" in mcols else "ORDER BY m.id DESC"
    sql = (f"SELECT {select.format(snip='substr(m.content, max(1, instr(m.content, ?) - 40), 120)')} FROM messages m "
           f"JOIN sessions s ON s.id = m.session_id WHERE ({' OR '.join(clauses)}) AND {live}"
           + "".join(f" AND {f}" for f in filters) + f" {order} LIMIT ? OFFSET ?")
    try:
        return [tuple(r) for r in conn.execute(sql, [tokens[0], *params, *fparams, limit, offset])]
    except sqlite3.OperationalError:
        return []


def _context(conn: sqlite3.Connection, mid: int, has_ts: bool) -> list[dict[str, str]]:
    """Previous, matched and next message of the session (Hermes' context CTE), 200 chars each."""
    try:
        if has_ts:
            # Same rows as Hermes' CTE (previous/next by (timestamp, id) within the session),
            # written with row values so SQLite walks idx_messages_session instead of the session.
            t = conn.execute("SELECT session_id, timestamp FROM messages WHERE id = ?", (mid,)).fetchone()
            if t is None:
                return []
            prev = conn.execute("SELECT role, content FROM messages WHERE session_id = ? AND (timestamp, id) < (?, ?) "
                                "ORDER BY timestamp DESC, id DESC LIMIT 1", (t[0], t[1], mid)).fetchall()
            cur = conn.execute("SELECT role, content FROM messages WHERE id = ?", (mid,)).fetchall()
            nxt = conn.execute("SELECT role, content FROM messages WHERE session_id = ? AND (timestamp, id) > (?, ?) "
                               "ORDER BY timestamp ASC, id ASC LIMIT 1", (t[0], t[1], mid)).fetchall()
            rows = prev + cur + nxt
        else:
            rows = conn.execute(
                """SELECT role, content FROM (SELECT role, content FROM messages
                     WHERE session_id = (SELECT session_id FROM messages WHERE id = ?) AND id < ? ORDER BY id DESC LIMIT 1)
                   UNION ALL SELECT role, content FROM messages WHERE id = ?
                   UNION ALL SELECT role, content FROM (SELECT role, content FROM messages
                     WHERE session_id = (SELECT session_id FROM messages WHERE id = ?) AND id > ? ORDER BY id ASC LIMIT 1)""",
                (mid, mid, mid, mid, mid)).fetchall()
    except sqlite3.Error:
        return []
    return [{"role": str(r[0]), "content": _preview(r[1])[:200]} for r in rows]


# --------------------------------------------------------------------------- recall (discover)


@dataclass(frozen=True)
class RecallHit:
    """One session's best hit, as ``session_search`` discover mode would show it.

    Attributes:
        session_id: the session owning the matched row (``parent_session_id`` in Hermes'
            result is our ``lineage_root`` when it differs).
        lineage_root: the root of its ``parent_session_id`` chain (hits are grouped by it).
        started_at: epoch seconds of the lineage root (Hermes' ``when``).
        snippet: FTS5 snippet with ``>>>``/``<<<`` around the match (``LIKE``: 120 chars).
        compacted: the hit is a compaction-archived row (summarised away from the live context).
        context: previous/matched/next message, 200 chars each.
        window: up to ``window`` user/assistant messages each side of the hit (the hit always
            kept), rewound rows excluded: ``{"id", "role", "content", "timestamp"}``.
    """

    session_id: str
    lineage_root: str
    title: str | None
    source: str
    model: str | None
    started_at: float | None
    matched_role: str
    match_message_id: int
    snippet: str
    compacted: bool
    context: tuple[dict[str, str], ...] = ()
    window: tuple[dict[str, Any], ...] = field(default=())

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["context"] = list(self.context)
        d["window"] = list(self.window)
        return d


def _resolve_root(conn: sqlite3.Connection, sid: str, cache: dict[str, str]) -> str:
    if sid in cache:
        return cache[sid]
    seen: set[str] = set()
    cur = sid
    while cur and cur not in seen:
        seen.add(cur)
        row = conn.execute("SELECT parent_session_id FROM sessions WHERE id = ?", (cur,)).fetchone()
        if not row or not row[0]:
            break
        cur = str(row[0])
    cache[sid] = cur
    return cur


def recall(
    db: StateDB,
    query: str,
    limit: int = 3,
    *,
    role_filter: Sequence[str] | None = ("user", "assistant"),
    current_session_id: str | None = None,
    window: int = 5,
    sort: str | None = None,
) -> list[RecallHit]:
    """What Hermes' ``session_search(query=...)`` (discover mode) would return; never raises.

    Pipeline (tools/session_search_tool.py:499-616): :func:`search_messages` with roles
    user/assistant, sources ``subagent``/``tool`` excluded, 300 rows; a stable re-sort puts
    ``cron`` rows after interactive ones; rows grouped by lineage root (``parent_session_id``
    chain), the current session's lineage skipped, the best row per root kept until ``limit``
    (clamped to 1-10) roots are found.

    Not reproduced: the title-match result Hermes puts first, and the session bookends.
    """
    try:
        limit = max(1, min(10, int(limit)))
    except (TypeError, ValueError):
        limit = 3
    rows = search_messages(db, query, role_filter=list(role_filter) if role_filter else None,
                           exclude_sources=list(HIDDEN_SESSION_SOURCES), limit=DISCOVER_SCAN_LIMIT, sort=sort,
                           with_context=False)
    rows.sort(key=lambda r: 1 if (r.get("source") or "") in DEMOTED_SESSION_SOURCES else 0)
    if not rows:
        return []

    def run(conn: sqlite3.Connection) -> list[RecallHit]:
        cache: dict[str, str] = {}
        current_root = _resolve_root(conn, current_session_id, cache) if current_session_id else None
        chosen: dict[str, dict[str, Any]] = {}
        for r in rows:
            if len(chosen) >= limit:
                break
            sid = str(r["session_id"])
            root = _resolve_root(conn, sid, cache)
            if (current_root and root == current_root) or (current_session_id and sid == current_session_id):
                continue
            chosen.setdefault(root, r)
        return [_hit(conn, root, r, window) for root, r in chosen.items()]

    return db.connection_for_reading()(run, [])


def iter_recall(
    db: StateDB,
    query: str,
    limit: int = 10,
    *,
    page_size: int = 3,
    role_filter: Sequence[str] | None = ("user", "assistant"),
    current_session_id: str | None = None,
    window: int = 5,
    scan_limit: int = DISCOVER_SCAN_LIMIT,
    chunk_rows: int = 64,
    cancelled: Callable[[], bool] | None = None,
) -> Iterator[list[RecallHit]]:
    """Recall newest first, in pages: for a dashboard that shows the first page at once.

    Yields lists of at most ``page_size`` :class:`RecallHit` (the last may be shorter; nothing
    is yielded when there is no hit). Same pipeline as :func:`recall` with ``sort="newest"``
    (Hermes ``search_messages`` ``ORDER BY m.timestamp DESC, rank`` over at most ``scan_limit``
    rows, tools/session_search_tool.py:499-616: roles, hidden sources, rewound rows, current
    lineage, one hit per lineage root, ``limit`` 1-10 roots, ``cron`` roots after interactive
    ones), read differently: FTS5 hands the matching rows newest first (``ORDER BY rowid DESC``
    with a ``LIMIT``, which FTS5 serves from its index without sorting) in chunks of
    ``chunk_rows``, so a common word costs the rows up to the page, not every match. "Newest"
    is the message id (Hermes' write order); it equals ``sort="newest"`` whenever timestamps
    grow with ids, as Hermes writes them (``time.time()`` at append). A ``cron`` lineage is
    yielded only after the scan ends, as Hermes demotes it below every interactive one.
    Snippets are computed only for the hits.

    The ``LIKE`` paths (no ``messages_fts``; CJK terms shorter than 3 characters) yield
    :func:`recall` ``sort="newest"`` as one page. ``cancelled()`` is checked between chunks;
    when it returns True the generator stops (also after a ``StateDB.interrupt()``). Never
    raises for a bad query or database.
    """
    try:
        limit = max(1, min(10, int(limit)))
    except (TypeError, ValueError):
        limit = 3
    page_size = max(1, int(page_size))
    if not isinstance(query, str) or not query.strip():
        return
    q = sanitize_fts5_query(query)
    if not q:
        return
    status = db.status()
    tables: set[str] = set() if status.state != "ok" else db.connection_for_reading()(
        lambda c: {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}, set())
    fts, match = None, q
    if count_cjk(q) > 0:
        raw = q.strip('"').strip()
        toks = [t for t in raw.split() if t.upper() not in _OPS and count_cjk(t) > 0]
        if count_cjk(raw) >= 3 and not any(count_cjk(t) < 3 for t in toks) and "messages_fts_trigram" in tables:
            fts = "messages_fts_trigram"
            match = " ".join(t if t.upper() in _OPS else '"' + t.replace('"', '""') + '"' for t in raw.split())
    elif "messages_fts" in tables:
        fts = "messages_fts"
    if fts is None:
        hits = recall(db, query, limit, role_filter=role_filter, current_session_id=current_session_id,
                      window=window, sort="newest")
        for i in range(0, len(hits), page_size):
            yield hits[i:i + page_size]
        return
    run = db.connection_for_reading()
    roles = list(role_filter) if role_filter else []

    def chunk(before: int | None, n: int) -> list[tuple[Any, ...]] | None:
        def go(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
            mcols = _columns(conn, "messages")
            live = ("(m.active = 1 OR m.compacted = 1)" if {"active", "compacted"} <= mcols
                    else ("m.active = 1" if "active" in mcols else "1"))
            where = [f"{fts} MATCH ?", live, f"s.source NOT IN ({','.join('?' * len(HIDDEN_SESSION_SOURCES))})"]
            params: list[Any] = [match, *HIDDEN_SESSION_SOURCES]
            if roles:
                where.append(f"m.role IN ({','.join('?' * len(roles))})")
                params += roles
            if before is not None:
                where.append(f"{fts}.rowid < ?")
                params.append(before)
            sql = (f"SELECT m.id, m.session_id, s.source FROM {fts} JOIN messages m ON m.id = {fts}.rowid "
                   f"JOIN sessions s ON s.id = m.session_id WHERE {' AND '.join(where)} ORDER BY {fts}.rowid DESC LIMIT ?")
            return [(mid, str(sid), source, _resolve_root(conn, str(sid), cache))
                    for mid, sid, source in conn.execute(sql, [*params, n]).fetchall()]
        return run(go, None)

    def build(roots_rows: list[tuple[str, int]]) -> list[RecallHit] | None:
        def go(conn: sqlite3.Connection) -> list[RecallHit]:
            out = []
            for root, mid in roots_rows:
                row = search_messages_by_id(conn, fts, match, mid)
                if row:
                    out.append(_hit(conn, root, row, window))
            return out
        return run(go, None)

    cache: dict[str, str] = {}
    current_root = run(lambda c: _resolve_root(c, current_session_id, cache), None) if current_session_id else None
    seen: set[str] = set()
    demoted: list[tuple[str, int]] = []
    page: list[tuple[str, int]] = []
    emitted = scanned = 0
    before: int | None = None
    n = max(1, int(chunk_rows))
    while scanned < scan_limit and emitted + len(page) < limit:
        if cancelled is not None and cancelled():
            return
        asked = min(n, scan_limit - scanned)
        rows = chunk(before, asked)
        if rows is None or (cancelled is not None and cancelled()):
            return  # database unavailable or interrupted
        for mid, sid, source, root in rows:
            scanned += 1
            if (current_root and root == current_root) or (current_session_id and sid == current_session_id) or root in seen:
                continue
            seen.add(root)
            if (source or "") in DEMOTED_SESSION_SOURCES:
                demoted.append((root, int(mid)))
                continue
            page.append((root, int(mid)))
            if emitted + len(page) >= limit:
                break
            if len(page) >= page_size:
                built = build(page)
                if built is None:
                    return
                emitted += len(page)
                page = []
                yield built
        if len(rows) < asked:
            break  # the matches are exhausted
        before = int(rows[-1][0])
        n = min(n * 2, 1024)
    page += demoted[:max(0, limit - emitted - len(page))]
    while page:
        if cancelled is not None and cancelled():
            return
        built = build(page[:page_size])
        if built is None:
            return
        page = page[page_size:]
        if built:
            yield built


def search_messages_by_id(conn: sqlite3.Connection, fts: str, match: str, mid: int) -> dict[str, Any] | None:
    """One matched row as a :func:`search_messages` dict (without ``context``), its snippet
    computed by ``fts`` for ``match``; None when the row does not match (any more)."""
    mcols = _columns(conn, "messages")
    ts_col = "m.timestamp" if "timestamp" in mcols else "0.0"
    tool_col = "m.tool_name" if "tool_name" in mcols else "NULL"
    compacted_col = "m.compacted" if "compacted" in mcols else "0"
    model_col = "s.model" if "model" in _columns(conn, "sessions") else "NULL"
    r = conn.execute(
        f"SELECT m.id, m.session_id, m.role, snippet({fts}, -1, '>>>', '<<<', '...', 40), {ts_col}, {tool_col}, s.source, "
        f"{model_col}, s.started_at, {compacted_col} FROM {fts} JOIN messages m ON m.id = {fts}.rowid "
        f"JOIN sessions s ON s.id = m.session_id WHERE {fts} MATCH ? AND {fts}.rowid = ?", (match, mid)).fetchone()
    if r is None:
        return None
    mid, sid, role, snippet, ts, tool, source, model, started, compacted = r
    return {"id": mid, "session_id": sid, "role": role, "snippet": snippet if isinstance(snippet, str) else "",
            "timestamp": ts, "tool_name": tool, "source": source, "model": model, "session_started": started,
            "compacted": bool(compacted)}


def _hit(conn: sqlite3.Connection, root: str, r: dict[str, Any], window: int) -> RecallHit:
    """The :class:`RecallHit` for row ``r`` (a :func:`search_messages` dict) of lineage ``root``."""
    scols = _columns(conn, "sessions")
    meta = conn.execute(
        f"SELECT {'title' if 'title' in scols else 'NULL'}, source, {'model' if 'model' in scols else 'NULL'}, started_at "
        "FROM sessions WHERE id = ?", (root,)).fetchone()
    title, source, model, started = meta if meta else (None, r.get("source"), r.get("model"), r.get("session_started"))
    mid, compacted = int(r["id"]), bool(r["compacted"])
    if compacted:  # an archived row whose live re-insert is the same message: show that one
        copy = _live_copy(conn, mid)
        if copy is not None:
            mid, compacted = copy, False
    return RecallHit(
        session_id=str(r["session_id"]), lineage_root=root, title=title, source=str(source or r.get("source") or "unknown"),
        model=model or r.get("model"), started_at=started if started is not None else r.get("session_started"),
        matched_role=str(r["role"]), match_message_id=mid, snippet=r["snippet"] or "",
        compacted=compacted,
        context=tuple(_context(conn, mid, "timestamp" in _columns(conn, "messages"))),
        window=tuple(_window(conn, str(r["session_id"]), mid, window)),
    )


def _live_copy(conn: sqlite3.Connection, mid: int) -> int | None:
    """The id of the live row that re-inserts archived row ``mid`` (same session, role,
    timestamp and content, a later id, ``active = 1``), or None.

    Hermes' proactive tool-result prune (0.23 default) and the head/tail of a compaction archive
    rows and insert them again keeping role, stamp and content (tool results the prune rewrites
    differ, and stay archived): such a row is not summarised away, and showing both would double
    it (issue 29)."""
    if not {"active", "compacted", "timestamp"} <= _columns(conn, "messages"):
        return None
    row = conn.execute(
        "SELECT c.id FROM messages m JOIN messages c ON c.session_id = m.session_id AND c.timestamp = m.timestamp "
        "AND c.id > m.id AND c.role = m.role AND c.content IS m.content AND c.active = 1 "
        "WHERE m.id = ? AND m.timestamp IS NOT NULL AND m.timestamp != 0 ORDER BY c.id LIMIT 1", (mid,)).fetchone()
    return int(row[0]) if row else None


#: Rows of ``messages`` :func:`_window` walks by id on each side of a hit before it asks the
#: session's index instead.
WINDOW_SPAN_ROWS = 4096


def _window(conn: sqlite3.Connection, sid: str, mid: int, n: int) -> list[dict[str, Any]]:
    mcols = _columns(conn, "messages")
    live = " AND (active = 1 OR compacted = 1 OR id = ?)" if {"active", "compacted"} <= mcols else ""
    ts = "timestamp" if "timestamp" in mcols else "NULL"
    lp: tuple[Any, ...] = (mid,) if live else ()
    # Walk the primary key from the hit within WINDOW_SPAN_ROWS (``+session_id``: not the
    # (session_id, timestamp) index, which cannot deliver id order and made SQLite sort the
    # whole session: 250 ms for a 200k-row live session). A walk that found fewer rows than
    # asked is conclusive only when it reached the table's end; otherwise ask the index.
    span = WINDOW_SPAN_ROWS
    before = conn.execute(f"SELECT id, role, content, {ts} FROM messages WHERE +session_id = ? AND id < ? AND id >= ?{live} "
                          "ORDER BY id DESC LIMIT ?", (sid, mid, mid - span, *lp, n)).fetchall()
    if len(before) < n and mid - span > 0:
        before = conn.execute(f"SELECT id, role, content, {ts} FROM messages WHERE session_id = ? AND id < ?{live} "
                              "ORDER BY id DESC LIMIT ?",
                              (sid, mid, *lp, n)).fetchall()
    after = conn.execute(f"SELECT id, role, content, {ts} FROM messages WHERE +session_id = ? AND id >= ? AND id <= ?{live} "
                         "ORDER BY id ASC LIMIT ?", (sid, mid, mid + span, *lp, n + 1)).fetchall()
    if len(after) < n + 1 and mid + span < (conn.execute("SELECT MAX(id) FROM messages").fetchone()[0] or 0):
        after = conn.execute(f"SELECT id, role, content, {ts} FROM messages WHERE session_id = ? AND id >= ?{live} ORDER BY id ASC LIMIT ?",
                             (sid, mid, *lp, n + 1)).fetchall()
    rows = list(reversed(before)) + list(after)
    # a row re-inserted later in the window (same role, content and stamp: a prune or a compaction's
    # head/tail copy) is shown once, as its newest copy
    newest: dict[tuple[Any, Any, Any], int] = {}
    for r in rows:
        if r[3]:
            newest[(r[1], r[2], r[3])] = max(int(r[0]), newest.get((r[1], r[2], r[3]), 0))
    out = []
    for r in rows:
        if r[0] != mid and r[3] and newest.get((r[1], r[2], r[3]), r[0]) != r[0]:
            continue
        if r[0] != mid and r[1] not in ("user", "assistant"):
            continue
        if r[0] != mid and _live_copy(conn, int(r[0])) is not None:
            continue  # an archived row whose live copy comes later: shown there, not twice
        content = decode_content(r[2])
        if isinstance(content, str) and r[1] in ("user", "assistant"):
            content = sanitize_context(content).strip()
        out.append({"id": r[0], "role": r[1], "content": content, "timestamp": r[3]})
    return out
