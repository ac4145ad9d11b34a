"""``AnchorStore``: MemLock's anchors written through memdeck's lock protocol (pin, unpin, update, archive, restore).

One concept: a change to the anchors. The model is :mod:`.model`, the files :mod:`.files`, undo
:mod:`.reverting`; ``AnchorStore`` composes them.

Layout (``Sahil-SS9/hermes-memlock``; see ``shared/reference/memlock.md`` §1)::

    $HERMES_HOME/memlock/<safe-sid>.json     one per session (SessionAnchors)
    $HERMES_HOME/memlock/persist/<id>.json    one per global pin
    $HERMES_HOME/memlock/persist/manifest.json  (MemLock >= 0.5) sha256 + size per file stem

Reading tolerates every version: missing keys take MemLock's blank-template defaults
(``store.py:44-56`` + ``turn_count`` >= 694ec32), unknown keys are kept and written back, the
session id is read from *inside* the file, both safe-sid naming rules are looked up.

Writing: ``fcntl`` sidecar lock ``<file>.lock``, reload under the lock, validate, atomic write
(temp ``<file name>.<8 hex>.tmp`` in the same directory, fsync, rename, fsync dir) via
:mod:`core.fsio`. JSON is written as MemLock writes it (``indent=2``, ``ensure_ascii=False``,
no trailing newline), plus ``self_sha256`` (>= 0.5 advisory anchor hash). Global pins keep
``persist/manifest.json`` consistent so MemLock >= 0.5 does not quarantine them.

Journal and undo: pin, unpin, update, archive and restore each append one :mod:`core.journal`
row (``kind="anchor"``, ``target`` None, ``session_id`` = the session id, or None for a change
to ``persist/`` alone, ``scope`` = ``"global"`` when the durable copy in ``persist/`` changed);
``before``/``after`` = the anchor record as sorted-key JSON or NULL;
``detail`` = ``{anchor_id, ...}`` with ``global_before``/``global_after`` when the durable copy
changed and ``archive_id`` for archive/restore). The ``anchor`` undo handler
(:meth:`AnchorStore.undo_rows`) is registered with :func:`core.journal.register_undo_handler`.
Every change is write-ahead (issue 13; :meth:`AnchorFiles.apply_change`): the journal row (and
an archive row's intent) is committed as ``intent`` first, then the global copy and the session
file are written, then the row is marked ``done``; the next change on that session resolves an
interrupted one from what is on disk. Archived anchors live in :mod:`core.archive` rows of ``kind="anchor"``.

Caveat (reference §7.6): a running MemLock holds each session's store in memory and
overwrites the file on its next save; memdeck's own plugin writes through
:meth:`AnchorStore.update_session` and so never loses an edit.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from ..deck import archive as _archive
from ..deck import journal as _journal
from ..errors import Refused
from . import rules as _rules
from .files import AnchorChange, record_text
from .model import (
    HISTORY_CAP,
    MAX_ANCHOR_CHARS,
    Anchor,
    SessionAnchors,
    new_pin_id,
    scan_or_refuse,
    seeded_anchors,
    validate_priority,
    validate_probes,
    validate_scope,
)
from .reverting import AnchorUndo


class AnchorStore(AnchorUndo):
    """Read and write MemLock's anchor files under ``<home>/memlock``.

    Args:
        home: a :class:`HermesHome` or the home directory.
        config: the home's :class:`Config` (loaded when None); ``memlock.max_pins`` is enforced.
        actor: who writes (``"cli"``, ``"tui"``, ``"plugin"``), recorded in the journal.
    """

    @staticmethod
    def seeded_anchors(config: Any, pins: Sequence[dict[str, Any]]) -> list[Anchor]:
        """The anchors MemLock would seed into a new session (see :func:`seeded_anchors`)."""
        return seeded_anchors(config, pins)

    def pin(self, text: str, *, priority: Any = 50, reminder: str | None = None, probes: Any = None,
            scope: str = "session", session_id: str) -> Anchor:
        """Pin a standing instruction into ``session_id`` (MemLock ``guard_pin``, validated).

        Text and reminder are whitespace-flattened; an empty reminder is the first sentence
        of the text (120 chars); missing probes are derived (:func:`core.audit.derive_probes`);
        the id is ``pin_<8 hex>``. ``scope="global"`` also writes ``persist/<id>.json`` and the
        manifest (under the session lock, before the session file; rolled back if the
        session write fails). Journaled as kind ``anchor``, op ``pin``.

        Raises:
            Refused: ``empty`` (no text), ``invalid`` (priority not an int 1-100, probes a
                string, bad scope, no session), ``threat`` (the threat scan found something),
                ``limit`` (the session already has ``max_pins`` pinned anchors),
                ``unreadable``/``unwritable`` (the session file or ``persist/``).
            LockTimeout, deckdb.DeckDBError: see :meth:`AnchorFiles.apply_change`.
        """
        if not isinstance(text, str):
            raise Refused(f"an anchor's text must be a string, got {type(text).__name__}; nothing was pinned",
                          "invalid", field="text")
        flat = _rules.flatten_ws(text)
        if not flat:
            raise Refused("an anchor needs text; nothing was pinned", "empty", field="text")
        if len(flat) > MAX_ANCHOR_CHARS:
            raise Refused(f"an anchor is at most {MAX_ANCHOR_CHARS:,} chars (this one is {len(flat):,}): standing "
                          "instructions are re-injected every time they drift; put longer text in MEMORY.md. "
                          "Nothing was pinned.", "too_long", field="text")
        prio = validate_priority(priority)
        scope = validate_scope(scope)
        rem = _rules.flatten_ws(reminder) or _rules.auto_reminder(flat)
        prb = validate_probes(probes, flat)
        if not session_id and scope != "global":
            raise Refused("no session to pin into: pass a session id (a global pin needs none)", "invalid",
                          field="session_id")
        scan_or_refuse(str(text), str(reminder or ""), flat, rem, " ".join(prb))
        if not session_id:
            return self._pin_global_only(flat, rem, prio, prb)
        max_pins = int(self.mcfg.max_pins)

        def build(s: SessionAnchors | None) -> AnchorChange:
            assert s is not None
            if s.pinned_now() >= max_pins:
                raise Refused(f"pin limit reached ({max_pins}) in session {session_id}; unpin or archive something first",
                              "limit", max_pins=max_pins)
            anchor = Anchor(id=new_pin_id(s.anchors), text=flat, reminder=rem, priority=prio, probes=prb, pinned=True,
                            extra={"pinned_at": time.time()})
            s.add(anchor)
            ch = AnchorChange("pin", anchor.id, {"scope": scope}, result=anchor)
            if scope == "global":
                ch.global_after = {**anchor.to_dict(), "scope": "global", "pinned_at": time.time()}
            return ch

        return self.apply_change(session_id, build).result

    def _pin_global_only(self, text: str, reminder: str, priority: int, probes: list[str]) -> Anchor:
        """A global pin made before any session exists: only ``persist/<id>.json`` (and the
        manifest) is written; MemLock seeds it into every new session. Journaled with
        ``session_id`` None, ``scope="global"`` (write-ahead, under ``persist/global.lock``)."""
        def build(_s: SessionAnchors | None) -> AnchorChange:
            anchor = Anchor(id=new_pin_id(self.global_ids()), text=text, reminder=reminder, priority=priority,
                            probes=probes, pinned=True, extra={"pinned_at": time.time()})
            record = self.pin_payload({**anchor.to_dict(), "scope": "global", "pinned_at": time.time()})
            return AnchorChange("pin", anchor.id, {"scope": "global"}, global_after=record, before=None,
                                after=record_text(record), result=anchor)

        return self.apply_change(None, build).result

    def unpin(self, anchor_id: str, *, session_id: str, scope: str | None = None) -> dict[str, Any]:
        """Remove a pinned anchor from ``session_id`` (MemLock ``unpin``: only ``pinned=true``).

        With ``scope="global"`` the durable copy in ``persist/`` is deleted too (MemLock >=
        0.5 semantics; without it a global pin is re-seeded into new sessions). A global pin
        that is not in this session can still be unpinned with ``scope="global"`` (journaled
        with no session id, scope ``"global"``). Journaled as op ``unpin``.

        Returns:
            ``{"id", "session_removed": bool, "global_removed": bool}``.

        Raises:
            Refused: ``not_found`` when the anchor is neither pinned in the session nor (with
                ``scope="global"``) a global pin; ``invalid`` for a bad scope;
                ``unreadable``/``unwritable``.
        """
        if scope is not None:
            validate_scope(scope)
        in_session = False
        if session_id:
            cur = self.load_for_write(session_id).anchors.get(anchor_id)
            in_session = cur is not None and cur.pinned
        if not in_session and not (scope == "global" and self.get_pin(anchor_id) is not None):
            raise Refused(f"anchor {anchor_id!r} not found or not pinned in session {session_id}", "not_found")

        def build(s: SessionAnchors | None) -> AnchorChange:
            ch = AnchorChange("unpin", anchor_id, {"scope": scope or "session"}, result={"session": False})
            rec = self.get_pin(anchor_id) if scope == "global" else None
            if rec is not None:
                ch.global_after = None
            if s is not None:
                a = s.anchors.get(anchor_id)
                if a is not None and a.pinned:
                    del s.anchors[anchor_id]
                    s.recount()
                    ch.result = {"session": True}
            else:
                ch.before, ch.after = record_text(rec), None
            if not ch.result["session"] and rec is None:
                raise Refused(f"anchor {anchor_id!r} not found or not pinned in session {session_id}", "not_found")
            return ch

        ch = self.apply_change(session_id if in_session else None, build)
        row = _journal.get(self.home, ch.journal_id) if ch.journal_id else None
        global_removed = "global_before" in (row.detail if row is not None else {})
        return {"id": anchor_id, "session_removed": bool(ch.result["session"]), "global_removed": global_removed}

    def update(self, anchor_id: str, *, text: str | None = None, reminder: str | None = None, priority: Any = None,
               probes: Any = None, session_id: str) -> Anchor:
        """Edit an anchor in place, keeping its id (MemLock >= 0.4 ``update_anchor``).

        The previous version goes to ``history`` (``{text, reminder, priority, probes,
        updated_at}``, last 5 kept). A changed text without a new reminder / probes gets an
        automatic reminder / derived probes; so does one whose reminder / probes are passed back
        unchanged while they were the automatic ones of the old text (MemLock re-injects the
        reminder, so a stale one would restate the old rule). Custom ones are kept. A global copy in ``persist/`` is rewritten too
        (under the session lock, write-ahead: see :meth:`AnchorFiles.apply_change`). Journaled as op ``update``.

        Raises:
            Refused: ``not_found``, ``empty`` (text given but blank), ``invalid``,
                ``threat``, ``no_change`` (nothing differs), ``unreadable``/``unwritable``.
        """
        if text is not None and not isinstance(text, str):
            raise Refused(f"an anchor's text must be a string, got {type(text).__name__}; nothing was changed",
                          "invalid", field="text")
        new_text = None if text is None else _rules.flatten_ws(text)
        if text is not None and not new_text:
            raise Refused("an anchor needs text; nothing was changed", "empty", field="text")
        if new_text is not None and len(new_text) > MAX_ANCHOR_CHARS:
            raise Refused(f"an anchor is at most {MAX_ANCHOR_CHARS:,} chars (this one is {len(new_text):,}); "
                          "nothing was changed", "too_long", field="text")
        new_prio = None if priority is None else validate_priority(priority)
        new_rem = None if reminder is None else _rules.flatten_ws(reminder)
        new_probes = None if probes is None else validate_probes(probes, new_text or "")
        scan_texts = [t for t in (text, reminder, new_text, new_rem, " ".join(new_probes or [])) if t]
        if scan_texts:
            scan_or_refuse(*scan_texts)
        now = time.time()
        is_global = anchor_id in self.global_ids()

        def build(s: SessionAnchors | None) -> AnchorChange:
            assert s is not None
            a = s.anchors.get(anchor_id)
            if a is None:
                ids = ", ".join(sorted(s.anchors)[:8]) or "(none)"
                raise Refused(f"anchor {anchor_id!r} not found in session {s.session_id}. Available ids: {ids}", "not_found")
            text_now = new_text if new_text is not None else a.text
            text_changed = new_text is not None and new_text != a.text
            # A reminder or probes that were derived from the old text follow the new text, also
            # when the caller passes them back unchanged (an edit form prefilled with them);
            # a custom reminder or custom probes stay.
            rem_given = new_rem
            if text_changed and rem_given == a.reminder and a.reminder == _rules.auto_reminder(a.text):
                rem_given = None
            probes_given = new_probes
            if (text_changed and probes_given is not None and list(probes_given) == list(a.probes)
                    and list(a.probes) == _rules.derive_probes(a.text)):
                probes_given = None
            rem_now = rem_given if rem_given else (_rules.auto_reminder(text_now) if text_changed else a.reminder)
            if probes_given is not None:
                probes_now = probes_given or _rules.derive_probes(text_now)
            elif text_changed:
                probes_now = _rules.derive_probes(text_now)
            else:
                probes_now = list(a.probes)
            prio_now = new_prio if new_prio is not None else a.priority
            if (text_now, rem_now, prio_now, list(probes_now)) == (a.text, a.reminder, a.priority, list(a.probes)):
                raise Refused(f"anchor {anchor_id!r} already has that content; nothing was changed", "no_change")
            hist = list(a.history or [])
            hist.append(a.version_entry(now))
            a.history = hist[-HISTORY_CAP:]
            a.text, a.reminder, a.priority, a.probes = text_now, rem_now, prio_now, list(probes_now)
            ch = AnchorChange("update", anchor_id, result=a)
            if is_global:
                ch.global_after = {**a.to_dict(), "scope": "global", "pinned_at": now}
            return ch

        return self.apply_change(session_id, build).result

    def archive(self, anchor_id: str, session_id: str, reason: str = "") -> int:
        """Move an anchor (pinned or static) out of its session into memdeck's archive table.

        The archive row (``kind="anchor"``, payload ``{session_id, scope, anchor}``) is committed
        in state ``archiving`` with the journal intent before the session file changes and
        becomes ``archived`` after (:meth:`AnchorFiles.apply_change`): a crash never loses and
        never duplicates. A global pin's durable copy is removed as well (under the session
        lock) and restored with it. Journaled as op ``archive`` (detail ``archive_id``).

        Returns:
            the archive id (an int, ``core.archive``).

        Raises:
            Refused: ``not_found`` when the session has no such anchor; ``unreadable``/``unwritable``.
        """
        probe = self.load_session(session_id).anchors.get(anchor_id)
        if probe is None:
            raise Refused(f"anchor {anchor_id!r} not found in session {session_id}", "not_found")
        is_global = anchor_id in self.global_ids()

        def build(s: SessionAnchors | None) -> AnchorChange:
            assert s is not None
            a = s.anchors.get(anchor_id)
            if a is None:
                raise Refused(f"anchor {anchor_id!r} not found in session {s.session_id}", "not_found")
            payload = {"session_id": session_id, "scope": "global" if is_global else "session", "anchor": a.to_dict()}
            del s.anchors[anchor_id]
            if not a.pinned and anchor_id in s.static_anchor_ids:
                s.static_anchor_ids.remove(anchor_id)
            s.recount()
            ch = AnchorChange("archive", anchor_id, {"reason": reason},
                              archive_insert={"payload": payload, "reason": reason, "text": a.text})
            if is_global and self.get_pin(anchor_id) is not None:
                ch.global_after = None
            return ch

        ch = self.apply_change(session_id, build)
        assert ch.archive_id is not None
        return ch.archive_id

    def restore(self, archive_id: Any) -> Anchor:
        """Put an archived anchor back into its session (and ``persist/`` if it was global).

        The archive row goes ``restoring`` with the journal intent (op ``restore``) before the
        session file is written and ``restored`` after, under the session lock
        (:meth:`AnchorFiles.apply_change`).

        Raises:
            Refused: ``not_found`` (no such archived anchor), ``conflict`` (the session
                already has that id), ``limit`` (max_pins reached), ``unreadable``/``unwritable``.
        """
        row = _archive.get_record(self.home, archive_id, kind="anchor")
        if row is None:
            raise Refused(f"no archived anchor {archive_id!r}", "not_found")
        payload = row.payload
        if not isinstance(payload.get("anchor"), dict) or not payload.get("session_id"):
            raise Refused(f"archived anchor {archive_id!r} has no restorable payload", "invalid")
        session_id = str(payload["session_id"])
        anchor = Anchor.from_dict(payload["anchor"])
        max_pins = int(self.mcfg.max_pins)

        def build(s: SessionAnchors | None) -> AnchorChange:
            assert s is not None
            # Re-read under the session lock: a concurrent restore of the same row holds it too.
            if _archive.get_record(self.home, row.archive_id, kind="anchor") is None:
                raise Refused(f"archived anchor {archive_id!r} was restored meanwhile", "conflict")
            if anchor.id in s.anchors:
                raise Refused(f"session {session_id} already has an anchor {anchor.id!r}", "conflict")
            if anchor.pinned and s.pinned_now() >= max_pins:
                raise Refused(f"pin limit reached ({max_pins}) in session {session_id}", "limit", max_pins=max_pins)
            s.add(anchor)
            ch = AnchorChange("restore", anchor.id, {"archive_id": row.archive_id},
                              archive_set=(row.archive_id, "archived", "restored"), result=anchor)
            if payload.get("scope") == "global":
                ch.global_after = {**anchor.to_dict(), "scope": "global", "pinned_at": time.time()}
            return ch

        return self.apply_change(session_id, build).result


__all__ = ["AnchorStore"]
