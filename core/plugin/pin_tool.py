"""The ``guard_pin`` tool: its schema, argument checks and handler.

MemLock's ``guard_pin`` (``pin_handler``): pin a standing instruction, unpin it, edit it in
place, or roll it back to an earlier version, on memdeck's locked anchor store
(``core/anchors/store.py`` ``AnchorStore``). Stricter than MemLock where MemLock crashes or
guesses: a non-integer priority or a string ``probes`` is refused with a clear error (MemLock
splits the string into characters); integer priorities outside 1-100 are clamped as MemLock
does; pinned text is threat-scanned (``AnchorStore.pin``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..anchors import rules as _rules
from ..anchors.model import Anchor, SessionAnchors
from ..anchors.store import AnchorStore
from ..config import MemlockConfig
from ..errors import MemdeckError, Refused

logger = logging.getLogger("memdeck.guard")

#: guard_pin's JSON schema: MemLock's ``_PIN_SCHEMA`` (0.2) + ``pin_id`` (0.4) + ``action`` /
#: ``version`` (0.5), with our own descriptions.
PIN_SCHEMA: dict[str, Any] = {
    "name": "guard_pin",
    "description": (
        "Pin a standing instruction that must survive context compaction. Use 'text' to pin a "
        "new instruction, 'unpin' with an anchor id to remove one, 'pin_id' with 'text' to "
        "edit a pin in place, or action='rollback' with 'pin_id' to restore an earlier version."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "text": {"type": "string", "description": "The standing instruction to preserve (pin or update)."},
            "unpin": {"type": "string", "description": "Anchor id to remove (takes precedence over everything else)."},
            "reminder": {"type": "string", "description": "Short form re-inserted after compaction "
                         "(optional; default: first sentence of text, 120 chars)."},
            "priority": {"type": "integer", "description": "Importance 1-100, higher is re-inserted first (default 50)."},
            "probes": {"type": "array", "items": {"type": "string"}, "description": "Distinctive keywords whose presence "
                       "shows the instruction survived (optional; derived from text)."},
            "scope": {"type": "string", "enum": ["session", "global"], "description": "session (default) dies with the session; "
                      "global persists across sessions. On unpin, global also deletes the durable copy."},
            "pin_id": {"type": "string", "description": "Edit this pin in place (with text), or the pin to roll back."},
            "action": {"type": "string", "enum": ["rollback"], "description": "rollback: restore a previous version of pin_id."},
            "version": {"type": "integer", "description": "History index for rollback: -1 (default) the most recent previous "
                        "version, 0 the oldest."},
        },
        "required": [],
    },
}


class PinTool:
    """The ``guard_pin`` methods of :class:`.guard.Guard` (a mixin: they use its store, lock,
    session cache, clock and ``_update``)."""

    current_session_id: str
    clock: Callable[[], float]
    _cache: dict[str, tuple[tuple, SessionAnchors]]
    _lock: threading.RLock

    if TYPE_CHECKING:  # read-only properties of Guard
        @property
        def store(self) -> AnchorStore: ...
        @property
        def mcfg(self) -> MemlockConfig: ...

    _update: Callable[[str, Callable[[SessionAnchors], Any]], Any]

    # -- guard_pin --------------------------------------------------------------------
    def pin_tool(self, args: dict | None = None, **kwargs: Any) -> str:
        """The ``guard_pin`` tool handler (Hermes calls ``handler(args, **kwargs)``,
        ``tools/registry.py:614-632``; 0.19 forwards ``session_id``).

        Dispatch as MemLock ``pin_handler``: ``unpin`` first, then ``action: rollback``, then
        ``pin_id`` (update), else pin. The session is the forwarded ``session_id``, else the
        last one seen by a hook. Returns MemLock's success texts, or ``"Error: ..."`` strings
        (never raises).
        """
        try:
            return self._pin_tool(args if isinstance(args, dict) else {}, kwargs)
        except Refused as exc:
            return f"Error: {exc.reason}"
        except MemdeckError as exc:
            return f"Error: {exc}"
        except Exception as exc:  # never let a tool call crash the turn
            logger.exception("memdeck: guard_pin failed")
            return f"Error: guard_pin failed ({type(exc).__name__}: {exc})"

    def _pin_tool(self, args: dict, kwargs: dict) -> str:
        session_id = str(kwargs.get("session_id") or "") or self.current_session_id
        if not session_id:
            return "Error: no active session; cannot pin before a session starts"
        with self._lock:
            self._cache.pop(session_id, None)
            unpin_id = _flat(args.get("unpin"))
            if unpin_id:
                return self._unpin(session_id, unpin_id, args)
            pin_id = _flat(args.get("pin_id"))
            action = _flat(args.get("action")).lower()
            if action and action != "rollback":
                return f"Error: unknown action {action!r} (the only action is 'rollback')"
            if action == "rollback":
                if not pin_id:
                    return "Error: 'pin_id' is required for rollback"
                return self._rollback(session_id, pin_id, args)
            if pin_id:
                return self._update_pin(session_id, pin_id, args)
            return self._pin(session_id, args)

    def _pin(self, session_id: str, args: dict) -> str:
        if args.get("text") is not None and not isinstance(args.get("text"), str):
            return f"Error: 'text' must be a string, got {type(args.get('text')).__name__}"
        text = _rules.flatten_ws(args.get("text"))
        if not text:
            return "Error: 'text' is required for pin"
        priority = _tool_priority(args.get("priority"), 50)
        probes = _tool_probes(args.get("probes"))
        scope = _flat(args.get("scope")).lower() or "session"
        if scope not in ("session", "global"):
            scope = "session"  # MemLock: invalid values become session
        try:
            anchor = self.store.pin(text, priority=priority, reminder=_flat(args.get("reminder")) or None,
                                    probes=probes, scope=scope, session_id=session_id)
        except Refused as exc:
            if exc.code == "limit":
                return f"Error: pin limit reached ({self.mcfg.max_pins}). Unpin something first (see /guard)."
            if exc.code == "empty":
                return "Error: 'text' is required for pin"
            raise
        note = " (global — survives sessions)" if scope == "global" else ""
        return (f"Pinned instruction (id={anchor.id}, priority={anchor.priority}, probes={len(anchor.probes)}, "
                f"scope={scope}{note}):\n  {anchor.text}\nWill survive context compaction.")

    def _unpin(self, session_id: str, anchor_id: str, args: dict) -> str:
        scope = _flat(args.get("scope")).lower()
        is_global = scope == "global"
        try:
            res = self.store.unpin(anchor_id, session_id=session_id, scope="global" if is_global else None)
        except Refused as exc:
            if exc.code == "not_found":
                return f"Error: anchor '{anchor_id}' not found or not pinned"
            raise
        if is_global and res.get("global_removed"):
            return f"Unpinned globally: {anchor_id}"
        return f"Unpinned: {anchor_id}"

    def _missing_pin(self, session_id: str, pin_id: str) -> str | None:
        s = self.store.load_session(session_id)
        if pin_id in s.anchors:
            return None
        ids = [a.id for a in s.sorted_anchors() if a.pinned][:8]
        return f"Error: pin '{pin_id}' not found. Available pin ids: {', '.join(ids) if ids else '(none)'}"

    def _update_pin(self, session_id: str, pin_id: str, args: dict) -> str:
        missing = self._missing_pin(session_id, pin_id)
        if missing:
            return missing
        if args.get("text") is not None and not isinstance(args.get("text"), str):
            return f"Error: 'text' must be a string, got {type(args.get('text')).__name__}"
        text = _rules.flatten_ws(args.get("text"))
        if not text:
            return "Error: 'text' is required for update"
        priority = _tool_priority(args.get("priority"), None)
        probes = _tool_probes(args.get("probes"))
        reminder = _flat(args.get("reminder"))
        # MemLock: an update without reminder/probes re-derives them from the new text.
        try:
            anchor = self.store.update(pin_id, text=text, reminder=reminder or _rules.auto_reminder(text),
                                       priority=priority, probes=probes if probes else _rules.derive_probes(text),
                                       session_id=session_id)
        except Refused as exc:
            if exc.code == "no_change":
                return f"Error: pin '{pin_id}' already has that content; nothing was changed"
            raise
        note = " (global copy updated)" if pin_id in self.store.global_ids() else ""
        return (f"Updated pin (id={pin_id}, priority={anchor.priority}, probes={len(anchor.probes)}{note}):\n"
                f"  {anchor.text}\nPrevious version kept in history.")

    def _rollback(self, session_id: str, pin_id: str, args: dict) -> str:
        missing = self._missing_pin(session_id, pin_id)
        if missing:
            return missing
        raw_version = args.get("version", -1)
        if isinstance(raw_version, bool):
            return "Error: 'version' must be an integer index into the pin's history"
        try:
            version = int(raw_version) if not isinstance(raw_version, float) or raw_version.is_integer() else None
        except (TypeError, ValueError):
            version = None
        if version is None:
            return "Error: 'version' must be an integer index into the pin's history"
        now = self.clock()

        def mutate(s: SessionAnchors) -> str | Anchor:
            a = s.anchors.get(pin_id)
            if a is None:
                return f"Error: pin '{pin_id}' not found"
            hist = list(a.history or [])
            if not hist:
                return (f"Error: pin '{pin_id}' has no version history to roll back to. "
                        f"Update it first (guard_pin with pin_id + text).")
            idx = len(hist) - 1 if version < 0 else version
            if not 0 <= idx < len(hist):
                return (f"Error: version index {version} out of range for pin '{pin_id}' ({len(hist)} version(s) in "
                        f"history; use -1 for the most recent previous version).")
            target = hist[idx]
            # MemLock rollback_anchor: the displaced current state goes onto history first.
            entry = a.version_entry(now)
            entry["rolled_back_from"] = idx
            hist.append(entry)
            a.text = _rules.flatten_ws(target.get("text", a.text))
            a.reminder = _rules.flatten_ws(target.get("reminder", a.reminder))
            a.priority = _rules.priority_of(target)
            a.probes = _rules.probes_of(target)
            a.history = hist[-5:]
            return a

        res = self._update(session_id, mutate)
        if isinstance(res, str):
            return res
        note = ""
        if pin_id in self.store.global_ids():
            self.store.save_pin({**res.to_dict(), "scope": "global", "pinned_at": now})
            note = " (global copy rolled back)"
        return (f"Rolled back pin (id={pin_id}, priority={res.priority}{note}):\n  {res.text}\n"
                f"Displaced version kept in history.")


def _flat(value: Any) -> str:
    return _rules.flatten_ws(value) if value is not None else ""


def _tool_priority(value: Any, default: int | None) -> int | None:
    """An integer priority clamped to 1-100 like MemLock; a non-integer is refused clearly."""
    if value is None or value == "":
        return default
    if isinstance(value, bool):
        raise Refused(f"priority must be an integer 1-100, got {value!r}", "invalid", field="priority")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        value = int(value.strip())
    if not isinstance(value, int):
        raise Refused(f"priority must be an integer 1-100, got {value!r}", "invalid", field="priority")
    return max(1, min(100, value))


def _tool_probes(value: Any) -> list[str] | None:
    """``None`` (derive) for a missing/empty value; a string is refused (MemLock would split it
    into characters); a list of non-empty strings is returned flattened."""
    if value is None or value == [] or value == "":
        return None
    if isinstance(value, (str, bytes)):
        raise Refused(f"probes must be an array of keywords, not a string ({value!r}); "
                      f"e.g. [\"bullet\", \"points\"]", "invalid", field="probes")
    if not isinstance(value, (list, tuple)):
        raise Refused(f"probes must be an array of keywords, got {type(value).__name__}", "invalid", field="probes")
    out = []
    for p in value:
        if not isinstance(p, str) or not _rules.flatten_ws(p):
            raise Refused(f"every probe must be a non-empty string, got {p!r}", "invalid", field="probes")
        out.append(_rules.flatten_ws(p))
    return out


__all__ = ["PIN_SCHEMA", "PinTool"]
