"""The read spine as data: every figure of a snapshot is a *part* of :data:`PARTS`.

A :class:`Part` names the :class:`core.overview.snapshot.DeckSnapshot` fields it fills (names
starting with ``_`` are values other parts take, not shown), its inputs, its reader function,
the panels where its failure shows as a banner, and whether it needs state.db. One small
:class:`Evaluator` reads a part again only when the key of its inputs changed, always after a
failure, and while the part says it is unfinished; otherwise the part's last values (and the
warnings it gave) are kept. A new capability adds a row, a reader and its test, nothing else.

Inputs (:attr:`Part.inputs`), each a name:

* ``stamp.memory``, ``stamp.pending``, ``stamp.memlock``, ``stamp.statedb``, ``stamp.config``:
  that field of the read's :class:`core.overview.snapshot.SourceStamps`;
* ``config``: the :class:`core.config.Config` object itself (a reloaded config is a new one);
* ``session``: the session asked for (None: follow the live one); ``report``: whether the
  followed session's Context report is asked for;
* ``each read``: never equal, the part is read on every read that reads anything;
* ``unfinished``: the part's own last value is not complete (:attr:`Part.unfinished`: an audit
  with ``pending`` compactions of a semantic history): never equal while it is so;
* any other name: the field of that name as another (earlier) part filled it.

Rules kept from the hand-written builder (each an input above, or a rule of the evaluator):
a read with any banner makes the next read read every part (:meth:`Evaluator.read`); the change
history is observed only when the memory or MemLock stamps changed (``observe``); the Hermes
profile is detected again only when state.db's layout (file, schema cookie), the pending records
or the config change; the review queue is read again when the pending writes, the memory files
or the provider changed; the audit continues a semantic history while ``pending`` > 0 and
is otherwise reused while the session, state.db's rows, the memory files, the session's anchors
and the config are unchanged.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..config import Config
from ..home import TARGETS, HermesHome
from .banners import describe_failure

if TYPE_CHECKING:
    from ..hermes_version import HermesVersion
    from ..sessions.statedb import StateDB
    from .snapshot import DeckSnapshot, SourceStamps

#: the input names that are not another part's field (module docstring)
SOURCE_INPUTS = ("stamp.memory", "stamp.pending", "stamp.memlock", "stamp.statedb", "stamp.config",
                 "config", "session", "report", "each read", "unfinished")


class _Never:
    """An input value equal to nothing, itself included (``each read``, ``unfinished``)."""

    def __eq__(self, other: object) -> bool:
        return False

    __hash__ = object.__hash__


class _Same:
    """An input compared by identity (the ``config`` object: a reloaded one is another)."""

    __slots__ = ("obj",)

    def __init__(self, obj: object) -> None:
        self.obj = obj

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Same) and other.obj is self.obj

    __hash__ = object.__hash__


class Context:
    """What a part's reader gets: the read's sources and the values of the parts before it.

    Attributes:
        home, config: the home and its config. db: the held state.db (None without one).
        session: the session asked for (None: follow the live one). report: the Context report
        is asked for. stamps: the read's :class:`core.overview.snapshot.SourceStamps`.
        history_budget_s: seconds the audit may spend on a first semantic history (None: the default).
        ledger_budget_s: seconds the constraint ledger may spend on compactions not kept yet (None:
            the default).
        now: epoch seconds of the read. values: field -> value filled so far this read.
        last: field -> value of the previous read (a part that continues its own work).
    """

    def __init__(self, home: HermesHome, config: Config, db: StateDB | None, *, session: str | None,
                 report: bool, stamps: SourceStamps, now: float, last: Mapping[str, Any],
                 history_budget_s: float | None = None, ledger_budget_s: float | None = None) -> None:
        self.home, self.config, self.db = home, config, db
        self.history_budget_s = history_budget_s
        self.ledger_budget_s = ledger_budget_s
        self.session, self.report, self.stamps, self.now = session, report, stamps, now
        self.values: dict[str, Any] = {}
        self.last = last
        self._store: Any = None
        self._banners: list[tuple[tuple[str, ...], str]] = []
        self._warnings: list[tuple[str, str]] = []
        self._failures: list[str] = []

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    @property
    def store(self) -> Any:
        """This read's :class:`core.anchors.store.AnchorStore` (its location resolved now)."""
        if self._store is None:
            from ..anchors.store import AnchorStore

            self._store = AnchorStore(self.home, self.config, actor="tui")
        return self._store

    def banner(self, panels: tuple[str, ...], source: str, fn: Callable[[], Any], default: Any) -> Any:
        """``fn()``, or ``default`` with the failure recorded as a banner ``"source: why"`` on
        ``panels`` (the part then counts as failed and is read again next time)."""
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - a failed source becomes a banner, never a crash
            self.fail(panels, source, exc)
            return default

    def fail(self, panels: tuple[str, ...], source: str, exc: BaseException) -> None:
        """Record a banner ``"source: why"`` on ``panels``, and the failure's whole text
        ``"Type: message"`` (:meth:`Evaluator.failure`: what ``status --json`` words it with)."""
        self._banners.append((panels, f"{source}: {describe_failure(exc)}"))
        self._failures.append(f"{type(exc).__name__}: {exc}")

    def warn(self, kind: str, text: str) -> None:
        """A non-fatal note of ``kind`` (``memlock``, ``history``): a line of ``warnings`` and a
        notice on the panels of that kind (``snapshot._NOTICE_PANELS``)."""
        self._warnings.append((kind, text))


Reader = Callable[[Context], Mapping[str, Any]]


@dataclass(frozen=True)
class Part:
    """One row of the parts table.

    Attributes:
        name: the part's name (the first field it fills, by convention).
        fills: the snapshot fields it fills (``_``-prefixed: values for other parts only).
        inputs: the names whose values make its key (module docstring).
        read: ``read(ctx) -> {field: value}`` for every field of :attr:`fills`; a source that
            fails is recorded with ``ctx.banner``/``ctx.fail`` (never raised).
        panels: the dashboard panels where its failure shows as a banner.
        needs_statedb: without a state.db the part is not read and its fields keep their defaults.
        unfinished: ``unfinished(values) -> bool``: its last values are incomplete and must be
            read again whatever the key (the ``unfinished`` input).
        fresh: its values count only in the read that made them (``new_changes``): kept, they
            are the defaults.
        asked: read only when a caller's ``want`` names one of its fields (or a part that takes
            it), never by a read of every part (``want=None``: the dashboard's): what only
            ``status --json`` shows.
    """

    name: str
    fills: tuple[str, ...]
    inputs: tuple[str, ...]
    read: Reader
    panels: tuple[str, ...] = ()
    needs_statedb: bool = False
    unfinished: Callable[[Mapping[str, Any]], bool] | None = None
    fresh: bool = False
    asked: bool = False


# --------------------------------------------------------------------------- the readers


def read_memory_files(ctx: Context) -> Mapping[str, Any]:
    """``memory``: target -> :class:`core.memory.reader.MemoryFileState` (a file that fails is
    absent, with its banner; a file that reads with an ``error`` gets a Capacity banner)."""
    from ..memory.reader import read_memory

    memory: dict[str, Any] = {}
    for target in TARGETS:
        name = ctx.home.memory_file(target).name
        state = ctx.banner(("capacity", "review"), name, functools.partial(read_memory, ctx.home, ctx.config, target), None)
        if state is not None:
            memory[target] = state
    for target, state in memory.items():
        if state.error:
            ctx.fail(("capacity",), ctx.home.memory_file(target).name, RuntimeError(state.error))
    return {"memory": memory}


def read_pending(ctx: Context) -> Mapping[str, Any]:
    """``pending``: :func:`core.memory.pending.list_pending`, oldest first."""
    from ..memory.pending import list_pending

    return {"pending": ctx.banner(("review",), "pending writes", lambda: tuple(list_pending(ctx.home)), ())}


def read_observation(ctx: Context) -> Mapping[str, Any]:
    """``new_changes``: what other writers changed, recorded now (``core/history/observation.py``).
    A failure is a notice on History (the history is not updated), not a banner."""
    from ..history.observation import observe

    try:
        return {"new_changes": tuple(observe(ctx.home, statedb=ctx.db, now=ctx.now))}
    except Exception as exc:  # noqa: BLE001 - the history never breaks the dashboard
        ctx.warn("history", f"change history not updated: {describe_failure(exc)}")
        return {"new_changes": ()}


def read_history(ctx: Context) -> Mapping[str, Any]:
    """``history``: the newest ``HISTORY_ROWS`` changes, newest first."""
    from ..history.changes import list_changes
    from .snapshot import HISTORY_ROWS

    return {"history": ctx.banner(("history",), "change history",
                                  lambda: tuple(list_changes(ctx.home, limit=HISTORY_ROWS)), ())}


def memory_changes(ctx: Context) -> Mapping[str, Any]:
    """``_changes_seen`` and ``_memory_changes``: counters that move when an observation recorded
    rows (any; of a memory file): the history's and the usage chart's input. Counters, not the
    rows, so the read after one that recorded rows (``new_changes`` back to empty) keeps them."""
    new = ctx["new_changes"]
    seen, mem = ctx.last.get("_changes_seen") or 0, ctx.last.get("_memory_changes") or 0
    return {"_changes_seen": seen + 1 if new else seen,
            "_memory_changes": mem + 1 if any(c.kind == "memory" for c in new) else mem}


def read_usage(ctx: Context) -> Mapping[str, Any]:
    """``usage_history``: target -> :class:`core.history.usage.UsageSeries`."""
    from ..history.usage import usage_series
    from .snapshot import _frozen

    return {"usage_history": ctx.banner(("capacity",), "usage history",
                                        lambda: _frozen({t: usage_series(ctx.home, t) for t in TARGETS}), _frozen({}))}


def read_archived(ctx: Context) -> Mapping[str, Any]:
    """``archived``: archived memory entries and anchors, newest first."""
    from ..deck.archive import items

    return {"archived": ctx.banner(("capacity", "anchors"), "archive",
                                   lambda: tuple(items(ctx.home, kind=None, state="archived")), ())}


def read_statedb(ctx: Context) -> Mapping[str, Any]:
    """``db_status``, ``data_version`` and ``_db_rows`` (a counter that moves when state.db's
    rows changed: :meth:`core.sessions.statedb.StateDB.refresh` says changed or reset, or failed)."""
    db = ctx.db
    assert db is not None
    delta = ctx.banner(("integrity", "recall"), "state.db", db.refresh, None)
    status = ctx.banner(("integrity",), "state.db", db.status, None)
    if status is not None and status.state != "ok":
        ctx.fail(("integrity", "recall"), "state.db", RuntimeError(status.message))
    same = delta is not None and not delta.changed and not delta.reset
    rows = ctx.last.get("_db_rows", 0)
    return {"db_status": status, "data_version": delta.data_version if delta is not None else None,
            "_db_rows": rows if same else rows + 1}


def read_sessions(ctx: Context) -> Mapping[str, Any]:
    """``sessions`` (newest first) and ``live_session``."""
    db = ctx.db
    assert db is not None
    return {"sessions": ctx.banner(("integrity",), "state.db sessions", lambda: tuple(db.sessions()), ()),
            "live_session": ctx.banner(("integrity",), "state.db live session", db.live_session, None)}


def read_anchor_sessions(ctx: Context) -> Mapping[str, Any]:
    """``anchor_sessions``: MemLock's session files; one warning per unreadable one."""
    infos = ctx.banner(("anchors", "integrity"), "memlock", lambda: tuple(ctx.store.list_sessions()), ())
    for info in infos:
        if info.error:
            ctx.warn("memlock", f"memlock: {info.path.name}: {info.error}")
    return {"anchor_sessions": infos}


def read_memlock_location(ctx: Context) -> Mapping[str, Any]:
    """``memlock_location``: where MemLock keeps the home's state, and a warning about it."""
    location = ctx.store.location
    if location.warning:
        ctx.warn("memlock", f"memlock: {location.warning}")
    return {"memlock_location": location}


def pick_session(ctx: Context) -> Mapping[str, Any]:
    """``session_id``: the session asked for, else the live one, else the newest readable MemLock
    session file; ``following_live``: no session was asked for."""
    from .snapshot import _pick_session

    return {"session_id": _pick_session(ctx.session, ctx["live_session"], ctx["anchor_sessions"]),
            "following_live": ctx.session is None}


def read_session_anchors(ctx: Context) -> Mapping[str, Any]:
    """``session_anchors`` of the shown session, ``global_ids`` and ``pin_warnings`` (global pins
    MemLock would not load), and ``_anchors_key`` (the anchors as a dict: the audit's input)."""
    from .snapshot import _pin_warnings

    store, shown = ctx.store, ctx["session_id"]
    anchors = None
    if shown:
        anchors = ctx.banner(("anchors", "integrity", "drift"), "memlock session", lambda: store.load_session(shown), None)
    pins = ctx.banner(("anchors",), "memlock persist", store.load_pins_report, None)
    warnings = _pin_warnings(pins)
    for w in warnings:
        ctx.warn("memlock", w)
    return {"session_anchors": anchors, "pin_warnings": warnings,
            "global_ids": frozenset(str(p["id"]) for p in pins.pins if p.get("scope") == "global") if pins else frozenset(),
            "_anchors_key": anchors.to_dict() if anchors is not None else None}


def read_audit(ctx: Context) -> Mapping[str, Any]:
    """``audit``: :func:`core.anchors.lifecycle.audit_session` of the shown session (None without
    its MemLock file), spending at most ``ctx.history_budget_s`` (default ``SEMANTIC_BUDGET_S``)
    on a first semantic history."""
    from ..anchors.lifecycle import audit_session
    from .snapshot import SEMANTIC_BUDGET_S

    shown, anchors = ctx["session_id"], ctx["session_anchors"]
    if not shown or anchors is None:
        return {"audit": None}
    budget = SEMANTIC_BUDGET_S if ctx.history_budget_s is None else ctx.history_budget_s
    return {"audit": ctx.banner(("integrity", "anchors", "drift"), "audit",
                                lambda: audit_session(ctx.db, ctx.store, shown, ctx.config, budget_s=budget),
                                None)}


def audit_unfinished(values: Mapping[str, Any]) -> bool:
    """True while the audit has compactions of a semantic history not embedded yet."""
    audit = values.get("audit")
    return bool(audit is not None and audit.pending)


def audit_points(ctx: Context) -> Mapping[str, Any]:
    """``_audit_points``: the audit's history points (the drift log's input)."""
    audit = ctx["audit"]
    return {"_audit_points": audit.history if audit is not None else ()}


def read_drift(ctx: Context) -> Mapping[str, Any]:
    """``drift_log`` (newest first: the audit's points, else MemLock's drift log) and
    ``integrity_history`` (``(epoch s, score 0-100)`` oldest first)."""
    from .snapshot import _frozen

    points, anchors = ctx["_audit_points"], ctx["session_anchors"]
    drift_log: tuple[Mapping[str, Any], ...] = ()
    if points:
        drift_log = tuple(_frozen(p) for p in reversed(points) if isinstance(p, Mapping))
    elif anchors is not None:
        drift_log = tuple(_frozen(e) for e in reversed(anchors.drift_log) if isinstance(e, Mapping))
    scores = tuple((float(e.get("time") or 0.0), int(e["score"])) for e in reversed(drift_log)
                   if isinstance(e.get("score"), (int, float)) and not isinstance(e.get("score"), bool))
    return {"drift_log": drift_log, "integrity_history": scores}


def read_compactions(ctx: Context) -> Mapping[str, Any]:
    """``compactions``: the shown session's compaction events, oldest first."""
    db, shown = ctx.db, ctx["session_id"]
    if db is None or not shown:
        return {"compactions": ()}
    return {"compactions": ctx.banner(("drift", "integrity"), "state.db compactions", lambda: tuple(db.compactions(shown)), ())}


def read_constraints(ctx: Context) -> Mapping[str, Any]:
    """``constraints``: the shown session's keyword constraint ledger counts
    (:func:`core.constraints.ledger.ledger_counts`), spending at most ``ctx.ledger_budget_s``
    (default ``LEDGER_BUDGET_S``) on compactions whose ledger is not kept yet (newest first; the
    dashboard's ledger worker fills the rest)."""
    from ..constraints.ledger import ledger_counts
    from .snapshot import LEDGER_BUDGET_S, _frozen

    db, shown = ctx.db, ctx["session_id"]
    if db is None or not shown:
        return {"constraints": None}
    budget = LEDGER_BUDGET_S if ctx.ledger_budget_s is None else ctx.ledger_budget_s
    # what else keeps a rule, as this read already read it (the memory files are read once a read)
    carried = [(t, e.text) for t, st in ctx["memory"].items() for e in st.entries]
    anchors = ctx["session_anchors"]
    if anchors is not None:
        carried += [("anchor", a.text) for a in anchors.sorted_anchors()]
    value = ctx.banner(("drift",), "constraint ledger",
                       lambda: ledger_counts(db, ctx.home, ctx.config, shown, budget_s=budget, carried=carried), None)
    return {"constraints": _frozen(value) if value is not None else None}


def constraints_unfinished(values: Mapping[str, Any]) -> bool:
    """True while the shown session's ledger has compactions not computed yet."""
    c = values.get("constraints")
    return bool(c is not None and c.get("pending"))


def read_prompt_blocks(ctx: Context) -> Mapping[str, Any]:
    """``prompt_blocks``: the frozen memory blocks the next session's system prompt will carry."""
    from ..memory.prompt_block import render_prompt_blocks

    return {"prompt_blocks": ctx.banner(("capacity",), "prompt blocks", lambda: render_prompt_blocks(ctx.home, ctx.config), "") or ""}


def reminder(ctx: Context) -> Mapping[str, Any]:
    """``reminder_block``: the audit's reminder block (``""`` without an audit)."""
    audit = ctx["audit"]
    return {"reminder_block": audit.reminder_block if audit is not None else ""}


def read_findings(ctx: Context) -> Mapping[str, Any]:
    """``findings``: text -> threat findings of every entry and pending write text that has any."""
    from .snapshot import _frozen, _scan_findings

    return {"findings": _frozen(ctx.banner(("review",), "threat scan", lambda: _scan_findings(ctx["memory"], ctx["pending"]), {}))}


def layout(ctx: Context) -> Mapping[str, Any]:
    """``schema_cookie`` (state.db's ``PRAGMA schema_version`` when read) and ``_layout`` (the
    database file and its schema cookie: what the Hermes profile depends on, not the rows)."""
    cookie = ctx.db.schema_cookie if ctx.db is not None else None
    return {"schema_cookie": cookie, "_layout": ((ctx.stamps.statedb or ())[:2], cookie)}


def read_profile(ctx: Context) -> Mapping[str, Any]:
    """``hermes_profile``: which Hermes wrote the home (:func:`core.sessions.profile.detect_profile`)."""
    from ..sessions.profile import detect_profile

    return {"hermes_profile": ctx.banner(("integrity",), "Hermes profile", lambda: detect_profile(ctx.home), None)}


def read_threat_differences(ctx: Context) -> Mapping[str, Any]:
    """``threat_differences``: entries and pending writes the home's Hermes judges otherwise."""
    from ..memory.pending import replay_texts
    from ..sessions.profile import threat_differences
    from .snapshot import _frozen

    def run() -> tuple[Mapping[str, Any], ...]:
        texts: list[tuple[str, str]] = []
        for target, st in ctx["memory"].items():
            texts.extend((target, e.text) for e in st.entries)
        for p in ctx["pending"]:
            texts.extend((f"pending {p.id}", t) for t in replay_texts(p.payload))
        return tuple(_frozen(d) for d in threat_differences(ctx["hermes_profile"], texts))

    return {"threat_differences": ctx.banner(("review",), "threat rules", run, ())}


def _version(ctx: Context) -> HermesVersion:
    """The :class:`core.hermes_version.HermesVersion` the home's profile detected (unknown: none)."""
    from ..hermes_version import HermesVersion

    profile = ctx.values.get("hermes_profile")
    return profile.hermes if profile is not None else HermesVersion()


def read_provider(ctx: Context) -> Mapping[str, Any]:
    """``provider``: the stores the home's Hermes treats as authoritative."""
    from .snapshot import _provider

    return {"provider": ctx.banner(("capacity",), "memory provider settings",
                                   lambda: _provider(ctx.home, ctx.config, _version(ctx)), None)}


def read_review(ctx: Context) -> Mapping[str, Any]:
    """``review``: what approving each pending write would do now (judged with the provider part's
    ``memory.provider``, or the config's when that part failed)."""
    from ..memory.review import queue_of
    from ..provider_settings import configured_provider

    # the provider part failed: the queue is still judged with memory.provider as this Hermes reads it
    provider = ctx["provider"]
    name = provider.name if provider is not None else configured_provider(ctx.config, _version(ctx))
    return {"review": ctx.banner(("review",), "review queue",
                                 lambda: tuple(queue_of(ctx["pending"], ctx["memory"], name)), ())}


def read_agent_view(ctx: Context) -> Mapping[str, Any]:
    """``agent_view``: what the open sessions see (``core/context``); it reuses its own last value
    while its basis is unchanged (:func:`core.overview.agent_view.build_agent_view`)."""
    from .agent_view import build_agent_view

    live = ctx["live_session"]
    version = _version(ctx)
    stamps = ctx.stamps
    basis = (stamps.statedb, stamps.memory, stamps.config, id(ctx.config), ctx.session,
             live.id if live is not None else None, ctx["reminder_block"], version, ctx["data_version"], ctx.report)
    followed = ctx.session if ctx.session is not None else (live.id if live is not None else None)
    return {"agent_view": ctx.banner(("context",), "what the sessions see", lambda: build_agent_view(
        ctx.home, ctx.config, ctx.db, session_id=followed, version=version, reminder_block=ctx["reminder_block"],
        basis=basis, previous=ctx.last.get("agent_view"), memory_key=stamps.memory, with_report=ctx.report), None)}


def read_hygiene_counts(ctx: Context) -> Mapping[str, Any]:
    """``hygiene_counts``: the hygiene findings the entries' text alone gives (duplicates, contradiction
    candidates, wasteful entries: :func:`core.hygiene.detect.pair_counts`, lexical, the same on
    every machine), read again only when a memory file changed (~9 ms for a full memory)."""
    from ..hygiene.detect import pair_counts
    from .snapshot import _frozen

    entries = {t: [e.text for e in st.entries] for t, st in ctx["memory"].items() if st is not None and not st.error}
    return {"hygiene_counts": _frozen(ctx.banner((CAP,), "hygiene", lambda: pair_counts(entries), {}))}


def count_stale_sessions(ctx: Context) -> Mapping[str, Any]:
    """``stale_sessions``: how many open sessions' frozen memory differs from the files
    (:attr:`core.overview.agent_view.AgentView.stale`); None when unknown (no agent view)."""
    view = ctx["agent_view"]
    return {"stale_sessions": None if view is None or view.error else len(view.stale)}


def read_cost_totals(ctx: Context) -> Mapping[str, Any]:
    """``cost_totals``: every API request the plugin recorded for the home (memdeck.db ``api_usage``,
    issue 37) with the cache hit ratio (:func:`memdeck.core.context.cost.totals_dict`); None when
    nothing is recorded. Read again when state.db changes (Hermes writes the turn as the plugin
    records its requests; memdeck.db never wakes memdeck)."""
    from ..context.cost import totals_dict
    from ..deck.usage import home_totals

    return {"cost_totals": totals_dict(home_totals(ctx.home))}


# --------------------------------------------------------------------------- the table

CAP, ANC, INT, DRI, REV, HIS, CTX, REC = "capacity", "anchors", "integrity", "drift", "review", "history", "context", "recall"

#: The parts, in the order they are read (a part's inputs are read before it).
PARTS: tuple[Part, ...] = (
    Part("memory", ("memory",), ("stamp.memory", "config"), read_memory_files, (CAP, REV)),
    Part("pending", ("pending",), ("stamp.pending", "config"), read_pending, (REV,)),
    Part("new_changes", ("new_changes",), ("stamp.memory", "stamp.memlock", "config"), read_observation, (HIS,), fresh=True),
    Part("_memory_changes", ("_changes_seen", "_memory_changes"), ("new_changes",), memory_changes),
    Part("history", ("history",), ("stamp.memory", "stamp.memlock", "config", "_changes_seen"), read_history, (HIS,)),
    Part("usage_history", ("usage_history",), ("stamp.memory", "config", "_memory_changes"), read_usage, (CAP,)),
    Part("archived", ("archived",), ("stamp.memory", "stamp.memlock", "config"), read_archived, (CAP, ANC)),
    Part("db_status", ("db_status", "data_version", "_db_rows"), ("stamp.statedb", "config"), read_statedb, (INT, REC),
         needs_statedb=True),
    Part("sessions", ("sessions", "live_session"), ("_db_rows", "db_status"), read_sessions, (INT,), needs_statedb=True),
    Part("anchor_sessions", ("anchor_sessions",), ("stamp.memlock", "config"), read_anchor_sessions, (ANC, INT)),
    Part("memlock_location", ("memlock_location",), ("each read",), read_memlock_location, (ANC, INT)),
    Part("session_id", ("session_id", "following_live"), ("session", "live_session", "anchor_sessions"), pick_session),
    Part("session_anchors", ("session_anchors", "global_ids", "pin_warnings", "_anchors_key"),
         ("stamp.memlock", "config", "session_id"), read_session_anchors, (ANC, INT, DRI)),
    Part("audit", ("audit",), ("session_id", "_db_rows", "memory", "_anchors_key", "config", "unfinished"), read_audit,
         (INT, ANC, DRI), needs_statedb=True, unfinished=audit_unfinished),
    Part("_audit_points", ("_audit_points",), ("audit",), audit_points),
    Part("drift_log", ("drift_log", "integrity_history"), ("_audit_points", "session_anchors"), read_drift),
    Part("compactions", ("compactions",), ("session_id", "_db_rows"), read_compactions, (DRI, INT), needs_statedb=True),
    Part("constraints", ("constraints",), ("session_id", "_db_rows", "memory", "session_anchors", "config",
                                          "unfinished"),
         read_constraints, (DRI,), needs_statedb=True, unfinished=constraints_unfinished),
    Part("prompt_blocks", ("prompt_blocks",), ("stamp.memory", "config"), read_prompt_blocks, (CAP,)),
    Part("reminder_block", ("reminder_block",), ("audit",), reminder),
    Part("findings", ("findings",), ("memory", "pending"), read_findings, (REV,)),
    Part("hygiene_counts", ("hygiene_counts",), ("memory",), read_hygiene_counts, (CAP,)),
    Part("schema_cookie", ("schema_cookie", "_layout"), ("each read",), layout),
    Part("hermes_profile", ("hermes_profile",), ("_layout", "stamp.pending", "config"), read_profile, (INT,)),
    Part("threat_differences", ("threat_differences",), ("memory", "pending", "hermes_profile"), read_threat_differences, (REV,)),
    Part("provider", ("provider",), ("stamp.config", "config", "hermes_profile"), read_provider, (CAP,)),
    Part("review", ("review",), ("pending", "memory", "provider"), read_review, (REV,)),
    Part("agent_view", ("agent_view",), ("each read", "live_session", "reminder_block", "hermes_profile", "data_version"),
         read_agent_view, (CTX,)),
    Part("stale_sessions", ("stale_sessions",), ("agent_view",), count_stale_sessions),
    Part("cost_totals", ("cost_totals",), ("data_version",), read_cost_totals, (CTX,)),
)

# --------------------------------------------------------------------------- status's parts
# What ``status --json`` shows and no panel reads (issue 32: status as the parts serialised).
# A block of its own, appended to the table, so other rows merge around it.


def read_change_summary(ctx: Context) -> Mapping[str, Any]:
    """``change_summary``: the change history in figures (:func:`core.history.changes.history_summary`:
    ``status``'s ``changes``). memdeck.db is not a stamped source: read on every read. Its failure
    is no banner of its own (the history part shows memdeck.db's)."""
    from ..history.changes import history_summary

    return {"change_summary": ctx.banner((), "change summary", lambda: history_summary(ctx.home), None)}


def read_drift_logs(ctx: Context) -> Mapping[str, Any]:
    """``drift_logs`` (``{time, session_id, score, casualties}`` of every readable MemLock session
    file's drift log, oldest first) and ``drift_log_warnings`` (``"file: why"`` per session file
    that could not be read). The shown session's anchors are the session_anchors part's."""
    from ..anchors.integrity_history import drift_event
    from .snapshot import _frozen

    shown = ctx["session_anchors"]
    rows: list[Mapping[str, Any]] = []
    warnings: list[str] = []
    for info in ctx["anchor_sessions"]:
        if info.error:
            warnings.append(f"{info.path.name}: {info.error}")
            continue
        try:
            s = shown if shown is not None and shown.session_id == info.session_id else ctx.store.load_session(info.session_id)
        except Exception as exc:  # noqa: BLE001 - one unreadable file is a line, not a failure
            warnings.append(f"{info.path.name}: {exc}")
            continue
        for e in map(drift_event, s.drift_log):
            if e is not None:
                rows.append(_frozen({"time": e["time"], "session_id": s.session_id, "score": e["score"],
                                     "casualties": e["casualties"]}))
    rows.sort(key=lambda e: e["time"])
    return {"drift_logs": tuple(rows), "drift_log_warnings": tuple(warnings)}


def read_global_pins(ctx: Context) -> Mapping[str, Any]:
    """``global_pins`` (``{id, text, reminder, priority, probes}`` of each global pin of
    ``memlock/persist/`` MemLock loads) and ``global_pin_warnings`` (the pins it would not load)."""
    from ..anchors.rules import priority_of, probes_of
    from .snapshot import _frozen

    report = ctx.banner((ANC,), "memlock persist", lambda: ctx.store.load_pins_report(), None)
    if report is None:
        return {"global_pins": (), "global_pin_warnings": ()}
    pins = tuple(_frozen({"id": str(p["id"]), "text": str(p.get("text", "")), "reminder": str(p.get("reminder", "")),
                          "priority": priority_of(p), "probes": probes_of(p)})
                 for p in report.pins if p.get("scope") == "global")
    notes = [f"persist/{stem}.json quarantined: its sha256 differs from manifest.json" for stem in report.quarantined]
    notes += [f"persist/{stem}.json skipped: {why}" for stem, why in sorted(report.skipped.items())]
    return {"global_pins": pins, "global_pin_warnings": tuple(notes)}


def read_detection(ctx: Context) -> Mapping[str, Any]:
    """``detection``: which detection memdeck's audit would run (:func:`core.anchors.encoder.semantic_encoder`'s
    :class:`~core.anchors.encoder.DetectionStatus`; the model's files are not stamped: every read)."""
    from ..anchors.encoder import semantic_encoder

    return {"detection": ctx.banner((INT,), "detection", lambda: semantic_encoder(ctx.config, ctx.home)[1], None)}


def read_hygiene(ctx: Context) -> Mapping[str, Any]:
    """``hygiene``: the lexical hygiene report (:func:`core.hygiene.detect.hygiene_report`; its
    stale findings depend on the clock: every read)."""
    from ..hygiene.detect import hygiene_report

    return {"hygiene": ctx.banner((CAP,), "hygiene", lambda: hygiene_report(ctx.home, ctx.config, semantic=False), None)}


PARTS += (
    Part("change_summary", ("change_summary",), ("each read",), read_change_summary),
    Part("drift_logs", ("drift_logs", "drift_log_warnings"), ("stamp.memlock", "config", "anchor_sessions", "session_anchors"),
         read_drift_logs, asked=True),
    Part("global_pins", ("global_pins", "global_pin_warnings"), ("stamp.memlock", "config"), read_global_pins, (ANC,),
         asked=True),
    Part("detection", ("detection",), ("each read",), read_detection, (INT,), asked=True),
    Part("hygiene", ("hygiene",), ("each read",), read_hygiene, (CAP,), asked=True),
)


#: the parts of a launch's first paint (no state.db, no memdeck.db): memory in milliseconds
FIRST_PAINT = ("memory", "pending", "prompt_blocks", "findings", "provider", "review")

#: field -> the part that fills it
FILLED_BY: Mapping[str, Part] = {f: p for p in PARTS for f in p.fills}


_DEFAULTS: dict[str, Any] = {}


def _defaults() -> dict[str, Any]:
    """The value of every field before any part filled it (the snapshot's defaults; ``_`` fields
    None, ``_db_rows`` 0). A fresh dict each call."""
    if not _DEFAULTS:
        _DEFAULTS.update(_compute_defaults())
    return dict(_DEFAULTS)


def _compute_defaults() -> dict[str, Any]:
    from dataclasses import fields

    from .snapshot import DeckSnapshot

    out: dict[str, Any] = {}
    for f in fields(DeckSnapshot):
        if f.name in FILLED_BY:
            out[f.name] = f.default_factory() if callable(f.default_factory) else f.default
    for p in PARTS:
        for name in p.fills:
            out.setdefault(name, 0 if name == "_db_rows" else None)
    return out


@dataclass
class _Kept:
    """One part's last read: its key, values, banners and warnings, and whether it failed."""

    key: tuple[Any, ...]
    values: Mapping[str, Any]
    banners: list[tuple[tuple[str, ...], str]] = field(default_factory=list)
    warnings: list[tuple[str, str]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


class Evaluator:
    """Reads the parts of one home, each again only when the key of its inputs changed, always
    after a failure and while it is unfinished (module docstring). One thread at a time."""

    def __init__(self) -> None:
        self._kept: dict[str, _Kept] = {}
        self._first: DeckSnapshot | None = None
        self._values: dict[str, Any] = _defaults()
        self._last: DeckSnapshot | None = None

    def failed(self, name: str) -> bool:
        """True when part ``name`` gave a banner in its last read, or has no value read (not
        asked for, or not read for want of state.db)."""
        kept = self._kept.get(name)
        return kept is None or bool(kept.banners)

    def failure(self, name: str) -> str | None:
        """The first failure of part ``name``'s last read as ``"Type: message"`` (the whole
        message, not the banner's first line), or None when it did not fail or was not read."""
        kept = self._kept.get(name)
        return kept.failures[0] if kept is not None and kept.failures else None

    def _key(self, part: Part, ctx: Context) -> tuple[Any, ...]:
        out: list[Any] = []
        for name in part.inputs:
            if name.startswith("stamp."):
                out.append(getattr(ctx.stamps, name[6:]))
            elif name == "config":
                out.append(_Same(ctx.config))
            elif name == "session":
                out.append(ctx.session)
            elif name == "report":
                out.append(ctx.report)
            elif name == "each read":
                out.append(_Never())
            elif name == "unfinished":
                kept = self._kept.get(part.name)
                done = kept is None or part.unfinished is None or not part.unfinished(kept.values)
                out.append(None if done else _Never())
            else:
                out.append(ctx.values[name])
        return tuple(out)

    def _run(self, ctx: Context, names: Collection[str]) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        """Read or keep each part of ``names`` (in table order); the banners and warnings of this read."""
        errors: dict[str, list[str]] = {}
        warnings: dict[str, list[str]] = {}
        values = ctx.values
        for part in PARTS:
            if part.name not in names:
                for f in part.fills:
                    values.setdefault(f, self._values[f])
                continue
            if part.needs_statedb and ctx.db is None:
                kept = _Kept((), {f: _DEFAULTS[f] for f in part.fills})
                self._kept.pop(part.name, None)
            else:
                key = self._key(part, ctx)
                kept_or_none = self._kept.get(part.name)
                if kept_or_none is not None and not kept_or_none.banners and kept_or_none.key == key:
                    kept = kept_or_none
                    if part.fresh:  # kept, a fresh part says nothing new
                        kept = _Kept(key, {f: _DEFAULTS[f] for f in part.fills})
                else:
                    ctx._banners, ctx._warnings, ctx._failures = [], [], []
                    got = dict(part.read(ctx))
                    kept = _Kept(key, got, ctx._banners, ctx._warnings, ctx._failures)
                    self._kept[part.name] = kept
            values.update(kept.values)
            for panels, msg in kept.banners:
                for p in panels:
                    lst = errors.setdefault(p, [])
                    if msg not in lst:
                        lst.append(msg)
            for kind, text in kept.warnings:
                warnings.setdefault(kind, []).append(text)
        self._values.update(values)
        return errors, warnings

    def first_paint(self, home: HermesHome, config: Config, *, now: float) -> DeckSnapshot:
        """The memory-only first snapshot (:data:`FIRST_PAINT`): no database is opened."""
        from .snapshot import DeckSnapshot, _frozen, _notices, take_stamps

        stamps = take_stamps(home, None)
        ctx = Context(home, config, None, session=None, report=False, stamps=stamps, now=now, last=self._values)
        # what the first paint did not read is not kept: the full read that follows reads it
        keep = {n: k for n, k in self._kept.items() if n in FIRST_PAINT}
        self._kept = keep
        for name in self._values:
            if FILLED_BY[name].name not in FIRST_PAINT:
                self._values[name] = _DEFAULTS[name]
        errors, _ = self._run(ctx, FIRST_PAINT)
        v = ctx.values
        self._first = DeckSnapshot(
            taken_at=now, home=home, config=config, provider=v["provider"], review=v["review"],
            memory=_frozen(v["memory"]), pending=v["pending"], prompt_blocks=v["prompt_blocks"], findings=v["findings"],
            errors=_frozen({p: " · ".join(m) for p, m in errors.items()}), notices=_notices(config.warnings),
            warnings=config.warnings, partial=True,
            stamps=replace(stamps, memlock=((("", None),),), statedb=("not read",)))
        return self._first

    def read(self, home: HermesHome, config: Config, db: StateDB | None, *, previous: DeckSnapshot | None,
             session_id: str | None, want: Collection[str] | None, context_report: bool, now: float,
             history_budget_s: float | None = None, ledger_budget_s: float | None = None) -> DeckSnapshot:
        """Read ``home`` now (see :meth:`core.overview.reader.HomeReader.read`). Never raises.

        When no source changed since ``previous`` (this evaluator's own last snapshot), the same
        session is asked for, ``previous`` had no banner and no part is unfinished, ``previous``
        itself is returned.
        """
        from .snapshot import DeckSnapshot, _frozen, _notices, take_stamps

        stamps = take_stamps(home, db)
        same_session = previous is not None and ((previous.following_live and session_id is None) or (
            not previous.following_live and session_id == previous.session_id))
        if (previous is not None and previous is self._last and not previous.errors and same_session
                and previous.stamps == stamps and previous.config is config
                and (previous.agent_view is None or previous.agent_view.report is not None or not context_report)
                and not any(p.unfinished is not None and p.name in self._kept and p.unfinished(self._kept[p.name].values)
                            for p in PARTS)):
            return previous
        if previous is None or previous.errors or previous is not self._last:
            # a read with a banner, or from a snapshot this evaluator did not make, reads every
            # part again; from its own first paint, the parts that paint read are kept
            first = previous is not None and previous is self._first and not previous.errors
            self._kept = {n: k for n, k in self._kept.items() if first and n in FIRST_PAINT}
        names = _closure(want)
        ctx = Context(home, config, db, session=session_id, report=context_report, stamps=stamps, now=now,
                      last=self._values, history_budget_s=history_budget_s, ledger_budget_s=ledger_budget_s)
        errors, warned = self._run(ctx, names)
        v = ctx.values
        history_w, memlock_w = warned.get("history", []), warned.get("memlock", [])
        snap = DeckSnapshot(
            taken_at=now, home=home, config=config, memory=_frozen(v["memory"]),
            **{f: v[f] for f in FILLED_BY if not f.startswith("_") and f not in ("memory",)},
            errors=_frozen({p: " · ".join(m) for p, m in errors.items()}),
            notices=_notices(config.warnings, memlock_w, history_w),
            warnings=(*config.warnings, *history_w, *memlock_w),
            stamps=stamps,
        )
        self._last = snap
        return snap


def _closure(want: Collection[str] | None) -> frozenset[str]:
    """The names of the parts that fill ``want`` (None: all but the :attr:`Part.asked` ones) and
    of every part they take inputs from."""
    if want is None:
        return frozenset(p.name for p in PARTS if not p.asked)
    todo = [FILLED_BY[f].name for f in want]
    out: set[str] = set()
    by_name = {p.name: p for p in PARTS}
    while todo:
        name = todo.pop()
        if name in out:
            continue
        out.add(name)
        todo.extend(FILLED_BY[i].name for i in by_name[name].inputs if i in FILLED_BY)
    return frozenset(out)


def figure() -> str:
    """The data flow as text, drawn from :data:`PARTS` (docs/ARCHITECTURE.md's first figure;
    ``python -m memdeck.core.overview.parts`` prints it): watcher -> stamps -> parts -> snapshot
    -> views, one line per part with its inputs, the panels of its banner, whether it needs
    state.db and whether it is read always or only when a caller asks (:attr:`Part.asked`)."""
    rows = [
        "watcher  core/watcher.py: memories/, pending/memory/, memlock/, state.db, config.yaml",
        "   │  stamps  core/overview/snapshot.py take_stamps: memory · pending · memlock · statedb · config",
        "   ▼",
        "parts    core/overview/parts.py PARTS, read by core/overview/reader.py HomeReader",
    ]
    table = [("part", "inputs", "banner on", "state.db", "read")] + [
        (p.name, ", ".join(p.inputs), ", ".join(p.panels) or "-", "yes" if p.needs_statedb else "-",
         "asked" if p.asked else "always") for p in PARTS]
    widths = [max(len(r[i]) for r in table) + 2 for i in range(4)]
    for r in table:
        rows.append(("   " + "".join(c.ljust(w) for c, w in zip(r, widths)) + r[4]).rstrip())
    rows += [
        "   ▼",
        "snapshot core/overview/snapshot.py DeckSnapshot (one frozen value; errors -> banners)",
        "   ▼",
        "views    tui/app.py on_snapshot_ready -> tui/widgets/panels/ (one panel per tab);",
        "         core/fleet/local.py LocalReader -> fleet rows and metrics",
    ]
    return "\n".join(rows)


if __name__ == "__main__":
    print(figure())
