"""The per-turn guard: MemLock's hooks, tool and status command on memdeck's locked anchor store.

:class:`Guard` does what MemLock's ``MemlockService`` does (``Sahil-SS9/hermes-memlock``
``f6cfb8b`` ``__init__.py`` and ``memlock_core/__init__.py`` at ``1b27ba5``/``694ec32``):
detect a compaction in the conversation history, audit the anchors against the active region,
score integrity, log drift, alert, and return the reminder block to inject. The difference is
where state lives: MemLock keeps each session's store in process memory and overwrites its file;
the guard keeps nothing authoritative in memory. Every turn it re-reads the session file (a
``stat`` when nothing changed) and every change goes through
:meth:`core.anchors.AnchorStore.update_session` (sidecar lock, reload under the lock, atomic
write), so a pin, edit or archive made by the dashboard or the CLI in another process shows in
the very next turn and no write from either side is lost.

Cost of a quiet turn (no compaction, no safety net, ``inject: on-drift``): one scan of the
history for a summary prefix, one sha256 of the summary body if there is one, one ``stat`` of
the session file, no audit and no write. The turn counter of a quiet turn is kept in memory
and persisted (``turn_count``, MemLock >= 694ec32) by ``on_session_end``, which Hermes 0.19
fires at the end of every ``run_conversation`` (``agent/turn_finalizer.py:605-630``), and by
any write the turn makes anyway; so the write is off the pre-LLM path and the file is exact
between turns. MemLock >= 694ec32 instead saves in ``increment_turn`` before every call.

Deliberate differences from MemLock (all stricter or additive):

* compaction detection also recognises Hermes' merge-into-tail shape
  (:func:`core.compaction.find_summary`), which MemLock's ``startswith`` misses;
* the audited active region has the current ``user_message`` appended when absent (MemLock >=
  0.3 behaviour);
* the semantic fallback uses the configured ``drift_threshold`` (see :mod:`core.audit`);
* ``guard_pin`` refuses a non-integer priority or a string ``probes`` with a clear error
  (MemLock crashes / splits the string into characters); integer priorities outside 1-100 are
  clamped as MemLock does; pinned text is threat-scanned (:meth:`AnchorStore.pin`);
* an alert script runs in its own session and is reaped (terminated after 5 s).

The guard's helpers are their own modules: ``pin_tool`` the ``guard_pin`` tool (``PIN_SCHEMA``
and the :class:`.pin_tool.PinTool` mixin whose ``pin_tool`` method is the handler);
``static_anchors`` config ``memlock.anchors`` validated as MemLock does; ``alert_script`` the
detached, reaped alert script.

No method here raises into Hermes: the hook wrappers in :mod:`core.hermes_plugin` catch and
log everything; the methods themselves raise only on programming errors and I/O failures.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..anchors import audit as _audit
from ..anchors import integrity_history as _history
from ..anchors import rehydration as _rehydration
from ..anchors import rules as _rules
from ..anchors.model import Anchor, SessionAnchors
from ..anchors.store import AnchorStore
from ..config import Config, MemlockConfig
from ..errors import LockTimeout
from ..home import HermesHome
from ..sessions.compaction import find_summary, message_text, split_context
from .alert_script import run_alert_script
from .pin_tool import PinTool
from .static_anchors import validate_static_anchors

logger = logging.getLogger("memdeck.guard")

#: The one-line hint ``/guard`` adds under MemLock's layout.
DASHBOARD_HINT = "Open the live dashboard with `memdeck` (pins, drift log, archive/restore)."
#: Session snapshots kept by :meth:`Guard.peek` (most recently used).
_CACHE_SESSIONS = 64


@dataclass(frozen=True)
class TurnOutcome:
    """What one ``pre_llm_call`` decided (for tests, the bench and debugging).

    Attributes:
        turn: the session's turn number.
        compaction: a new compaction was detected (summary body hash differs from the file's).
        safety_net: the ``hard_reinject_turns`` safety net fired.
        audited: an audit ran.
        score: integrity score after the audit (percent 0-100), None if no audit / no anchors.
        drifted: ids found drifted by the audit.
        injected: ids whose reminders are in the block.
        block: the reminder block ("" when nothing is injected).
        alert: the alert message raised, "" when none.
        wrote: the session file was rewritten.
    """

    turn: int
    compaction: bool = False
    safety_net: bool = False
    audited: bool = False
    score: int | None = None
    drifted: tuple[str, ...] = ()
    injected: tuple[str, ...] = ()
    block: str = ""
    alert: str = ""
    wrote: bool = False


#: Seconds a hook waits for a MemLock file's lock before skipping that turn's write (Hermes'
#: turn must not wait on a dashboard or a second gateway; memdeck's writes hold it for ms).
HOOK_LOCK_TIMEOUT = 0.5

class Guard(PinTool):
    """MemLock's engine for one Hermes home, stateless between turns except the turn counters.

    Args:
        home: the Hermes home whose ``memlock/`` it guards.
        config: a :class:`Config`, or a zero-argument callable returning the current one (the
            plugin passes a reloader, so ``config.yaml`` edits apply on the next turn).
        encoder: optional sentence encoder for ``detection: semantic`` (an object with
            ``encode(list[str])`` or a callable); None: memdeck's verified all-MiniLM-L6-v2 for
            ``embedding_model`` (``core/anchors/encoder.py``), its vectors cached in memdeck.db.
        clock: epoch-seconds clock (tests).
        actor: journal actor of writes (``"plugin"``).
    """

    def __init__(self, home: HermesHome, config: Config | Callable[[], Config], *, encoder: Any = None,
                 clock: Callable[[], float] = time.time, actor: str = "plugin") -> None:
        self.home = home
        self._config_src = config if callable(config) else (lambda c=config: c)
        self.encoder = encoder
        self.clock = clock
        self.actor = actor
        self.current_session_id = ""
        self._turns: dict[str, int] = {}
        self._cache: dict[str, tuple[tuple, SessionAnchors]] = {}
        self._store: AnchorStore | None = None
        self._store_cfg: Config | None = None
        self.last_outcome: TurnOutcome | None = None
        self._lock = threading.RLock()

    # -- plumbing --------------------------------------------------------------
    @property
    def config(self) -> Config:
        return self._config_src()

    @property
    def mcfg(self) -> MemlockConfig:
        return self.config.memlock

    @property
    def store(self) -> AnchorStore:
        cfg = self.config
        if self._store is None or self._store_cfg is not cfg:
            # a hook must never hold the agent's turn: a held lock is waited for briefly, then
            # the turn's write is skipped (the state stays in memory and lands next turn)
            self._store = AnchorStore(self.home, cfg, actor=self.actor, lock_timeout=HOOK_LOCK_TIMEOUT)
            self._store_cfg = cfg
        return self._store

    def _signature(self, session_id: str) -> tuple:
        path = self.store.find_session_file(session_id)
        if path is None:
            return (None,)
        try:
            st = os.stat(path)
        except OSError:
            return (None,)
        return (str(path), st.st_ino, st.st_mtime_ns, st.st_size)

    def peek(self, session_id: str) -> SessionAnchors:
        """The session as on disk, re-read only when its file changed (stat signature).

        Raises:
            UnreadableFile: the file exists but is not a MemLock JSON object.
        """
        sig = self._signature(session_id)
        hit = self._cache.get(session_id)
        if hit is not None and hit[0] == sig and sig != (None,):
            return hit[1]
        s = self.store.load_session(session_id)
        if sig != (None,):
            self._cache.pop(session_id, None)
            self._cache[session_id] = (sig, s)
            while len(self._cache) > _CACHE_SESSIONS:  # a gateway serves many sessions: keep the recent ones
                self._cache.pop(next(iter(self._cache)))
        else:
            self._cache.pop(session_id, None)
        return s

    def _update(self, session_id: str, mutate: Callable[[SessionAnchors], Any]) -> Any:
        """Apply ``mutate`` to the session file under its lock. When another writer holds the
        lock past :data:`HOOK_LOCK_TIMEOUT`, the turn still gets its decision (``mutate`` on the
        file as read) but nothing is saved this turn; the next turn saves again."""
        self._cache.pop(session_id, None)
        try:
            return self.store.update_session(session_id, mutate)
        except LockTimeout as exc:
            logger.warning("memdeck: %s; this turn's anchor state is not saved", exc)
            return mutate(self.store.load_session(session_id))

    def turn_of(self, session_id: str) -> int:
        """The last turn number seen in this process for ``session_id`` (0 = none)."""
        return self._turns.get(session_id, 0)

    # -- hooks --------------------------------------------------------------------
    def on_session_start(self, session_id: str = "", **_: Any) -> list[str]:
        """Seed config static anchors (validated as MemLock does) then global pins.

        Anchors already in the session are left alone (MemLock ``_on_start``), so an edit made
        in the dashboard is not overwritten by the config copy. Global pins come from
        ``persist/`` (``scope: global`` only, quarantined files skipped). The turn counter is
        not reset (MemLock >= 694ec32). Returns the ids added.
        """
        if not session_id:
            return []
        with self._lock:
            self.current_session_id = session_id
            statics = validate_static_anchors(list(self.mcfg.anchors))
            try:
                pins = [p for p in self.store.load_pins() if p.get("scope") == "global"]
            except Exception as exc:  # noqa: BLE001 - seeding global pins must not block static seeding
                logger.warning("memdeck: failed to read global pins: %s", exc)
                pins = []

            def mutate(s: SessionAnchors) -> list[str]:
                added = []
                for a in statics:
                    if a["id"] not in s.anchors:
                        s.add(Anchor(id=a["id"], text=a["text"], reminder=a["reminder"], priority=a["priority"],
                                     probes=list(a["probes"]), pinned=a["pinned"]))
                        added.append(a["id"])
                for p in pins:
                    pid = str(p["id"])
                    if pid in s.anchors:
                        continue
                    text = str(p["text"])
                    s.add(Anchor(id=pid, text=text, reminder=str(p.get("reminder") or text[:_rules.REMINDER_LINE_CHARS]),
                                 priority=_rules.priority_of(p), probes=_rules.probes_of(p), pinned=True))
                    added.append(pid)
                return added

            if not statics and not pins:
                return []
            return self._update(session_id, mutate)

    def on_session_end(self, session_id: str = "", **_: Any) -> bool:
        """Persist this process's turn counter when it is ahead of the file. Returns whether it wrote."""
        if not session_id:
            return False
        with self._lock:
            turn = self._turns.get(session_id, 0)
            if not turn:
                return False
            snap = self.peek(session_id)
            if snap.turn_count >= turn and snap.path is not None:
                return False

            def mutate(s: SessionAnchors) -> None:
                s.turn_count = max(s.turn_count, turn)

            self._update(session_id, mutate)
            return True

    def pre_llm_call(self, session_id: str = "", user_message: str = "", conversation_history: list | None = None,
                     **_: Any) -> dict[str, str] | None:
        """The ``pre_llm_call`` hook: returns ``{"context": reminder_block}`` or None.

        Matches MemLock ``_on_pre_llm`` / ``MemlockService.pre_llm_turn`` (``__init__.py:283-415``):
        turn += 1; new compaction = a summary whose body hash differs from
        ``last_summary_hash`` (then the hash and ``last_compaction_at`` are recorded); safety
        net = no compaction, ``hard_reinject_turns > 0`` and ``turn - last_reinject_turn >=
        hard_reinject_turns``; audit on either; in ``on-drift`` mode a turn without audit
        injects nothing; candidates are every anchor (``always``), else the drifted ones, else
        every anchor on a safety-net turn; packed by ``max_slots`` / ``max_reminder_chars``;
        ``last_reinject_turn`` = turn when a block is returned.
        """
        outcome = self.run_turn(session_id, conversation_history or [], user_message)
        return {"context": outcome.block} if outcome.block else None

    def run_turn(self, session_id: str, history: Sequence[Any], user_message: str = "") -> TurnOutcome:
        """:meth:`pre_llm_call` returning the full :class:`TurnOutcome` (see there)."""
        if not session_id:
            return TurnOutcome(turn=0)
        with self._lock:
            self.current_session_id = session_id
            cfg = self.mcfg
            idx, match = find_summary(history)
            summary_hash = match.body_hash if match is not None else None
            snap = self.peek(session_id)
            turn = max(self._turns.get(session_id, 0), snap.turn_count) + 1
            self._turns[session_id] = turn
            inject_always = str(cfg.inject).strip().lower() == "always"
            hr = int(cfg.hard_reinject_turns)
            compaction = summary_hash is not None and summary_hash != snap.last_summary_hash
            safety = (not compaction) and hr > 0 and (turn - snap.last_reinject_turn) >= hr
            if not inject_always and not compaction and not safety:
                out = TurnOutcome(turn=turn)
                self.last_outcome = out
                return out
            if not snap.anchors and not compaction:
                out = TurnOutcome(turn=turn, safety_net=safety)
                self.last_outcome = out
                return out

            active_cache: list[Any] = []

            def active_region() -> list[Any]:
                if not active_cache:
                    _, active = split_context(history, idx)
                    if user_message and not any(
                        isinstance(m, dict) and str(m.get("role", "")).lower() == "user" and message_text(m) == user_message
                        for m in active
                    ):
                        active.append({"role": "user", "content": user_message})
                    active_cache.append(active)
                return active_cache[0]

            # Audit outside the lock against the snapshot (semantic encoding can be slow);
            # anchors added or edited meanwhile are audited again under the lock.
            pre: dict[str, tuple[tuple, _audit.AnchorVerdict]] = {}
            if compaction or safety:
                anchors = snap.sorted_anchors()
                if anchors:
                    verdicts = _audit.run_audit(anchors, active_region(), cfg, encoder=self.encoder, home=self.home)
                    pre = {a.id: (_content_key(a), verdicts[a.id]) for a in anchors if a.id in verdicts}
            now = self.clock()
            result: dict[str, Any] = {}

            def mutate(s: SessionAnchors) -> None:
                s.turn_count = max(s.turn_count, turn)
                comp = summary_hash is not None and summary_hash != s.last_summary_hash
                if comp:
                    s.last_summary_hash = summary_hash
                    s.last_compaction_at = now
                net = (not comp) and hr > 0 and (turn - s.last_reinject_turn) >= hr
                result.update(compaction=comp, safety_net=net)
                audit_now = comp or net
                if not inject_always and not audit_now:
                    return
                anchors = s.sorted_anchors()
                if not anchors:
                    return
                drifted: list[str] = []
                if audit_now:
                    verdicts = {a.id: pre[a.id][1] for a in anchors if a.id in pre and pre[a.id][0] == _content_key(a)}
                    stale = [a for a in anchors if a.id not in verdicts]
                    if stale:
                        verdicts.update(_audit.run_audit(stale, active_region(), cfg, encoder=self.encoder, home=self.home))
                    ordered = {a.id: verdicts[a.id] for a in anchors if a.id in verdicts}
                    score, drifted = s.record_audit(ordered, turn, now)
                    result.update(audited=True, score=score, drifted=tuple(drifted))
                    if score is not None and _audit.should_alert(score, s.last_alert_at, now, cfg.alert_floor,
                                                                 cfg.alert_cooldown_s):
                        result["alert"] = _audit.alert_message(score, session_id, drifted)
                        s.last_alert_at = now
                block, selected, _remaining = _rehydration.plan_reminder(anchors, drifted, cfg, safety_net=net)
                if block:
                    s.last_reinject_turn = turn
                    result.update(block=block, injected=tuple(selected))

            before = self._signature(session_id)
            self._update(session_id, mutate)
            wrote = self._signature(session_id) != before
            alert = result.get("alert", "")
            if alert:
                logger.warning(alert)
                script = str(cfg.alert_script or "").strip()
                if script:
                    run_alert_script(script, alert)
            out = TurnOutcome(
                turn=turn, compaction=result.get("compaction", False), safety_net=result.get("safety_net", False),
                audited=result.get("audited", False), score=result.get("score"), drifted=result.get("drifted", ()),
                injected=result.get("injected", ()), block=result.get("block", ""), alert=alert, wrote=wrote,
            )
            self.last_outcome = out
            return out

    # -- /guard -----------------------------------------------------------------------
    def status_text(self, raw_args: str = "", session_id: str = "") -> str:
        """``/guard``: MemLock's status layout (``_status_cmd`` / ``status_text``) + a dashboard hint.

        Reports the session given, else the last one a hook saw; ``MemLock: no active
        session yet`` when there is none. Read fresh from disk.
        """
        sid = session_id or self.current_session_id
        if not sid:
            return "MemLock: no active session yet\n" + DASHBOARD_HINT
        s = self.store.load_session(sid)
        anchors = s.sorted_anchors()
        lines = [
            f"MemLock — session {sid}",
            f"  integrity_score: {s.integrity_score}% (anchors: {len(anchors)})",
            f"  pins: {sum(1 for a in anchors if a.pinned)}",
            f"  static: {sum(1 for a in anchors if not a.pinned)}",
            f"  last compaction: {s.last_compaction_at}",
            "",
        ]
        if anchors:
            lines.append("Anchors:")
            for a in anchors:
                lines.append(f"  {'[pin]' if a.pinned else '[static]'} [{'DRIFTED' if a.drifted else 'ALIVE'}] "
                             f"{a.id} (p={a.priority}) — {a.reminder[:60]}")
        with_history = [a for a in anchors if a.pinned and a.history]
        if with_history:
            lines.append("Pin version history (oldest -> newest, then current):")
            for a in with_history:
                heads = " | ".join(str(h.get("text", ""))[:30] for h in a.history or [])
                lines.append(f"  {a.id} ({len(a.history or [])} prior version(s)) current: {a.text[:60]}")
                lines.append(f"    history: {heads}")
        if s.drift_log:
            lines.append(f"\nDrift events: {len(s.drift_log)} (most recent first)")
            for raw in reversed(s.drift_log[-3:]):
                ev = _history.drift_event(raw) or {"time": None, "score": None, "casualties": []}
                when = "??:??:??"
                if ev["time"] is not None:
                    try:
                        when = time.strftime("%H:%M:%S", time.localtime(ev["time"]))
                    except (ValueError, OverflowError, OSError):
                        pass
                score = "n/a" if ev["score"] is None else f"{ev['score']}%"
                lines.append(f"  {when} score={score} casualties={len(ev['casualties'])}")
        lines.append(DASHBOARD_HINT)
        return "\n".join(lines)


def _content_key(a: Anchor) -> tuple:
    return (a.text, tuple(a.probes))
