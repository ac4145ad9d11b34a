"""The dashboard's actions: what each key does with the current selection.

Every write is a closure over one core operation, run by ``MemdeckApp.run_write`` in a
thread worker (group ``write``); the result comes back as a toast. Destructive actions ask
first (:class:`tui.screens.confirm.ConfirmScreen`). Nothing here touches a file directly.
These functions are bound as methods of :class:`tui.app.MemdeckApp`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text

from memdeck.core.errors import Refused
from memdeck.core.home import TARGET_FILES
from memdeck.core.memory.entries import archive_candidates, entry_id

from .failsafe import toast_on_error
from .messages import WriteOutcome
from .safe_text import safe_plain, safe_text

if TYPE_CHECKING:  # pragma: no cover
    from .app import MemdeckApp

def refusal_outcome(exc: Refused) -> WriteOutcome:
    """A toast for a refusal: the reason, plus what the caller can act on.

    Overflow lists the entries you could archive (largest first), mirroring Hermes 0.19's
    refusal responses that carry ``current_entries`` and ``usage``
    (``tools/memory_tool.py:346-396``).
    """
    detail: list[str] = []
    d = exc.details or {}
    if exc.code == "overflow":
        usage = d.get("usage")
        if usage:
            detail.append(f"usage: {usage}")
        entries = [str(e.get("text", "")) if isinstance(e, dict) else str(e) for e in d.get("current_entries") or []]
        need = int(d.get("would_be") or 0) - int(d.get("limit") or 0)
        cands = archive_candidates(entries, need) if need > 0 else []
        if entries:
            detail.append(f"entries you could archive to make room (a in Capacity; {need:,} chars needed):" if cands
                          else "entries you could archive (a), largest first:")
            for cid, chars, e in (cands or [(entry_id(x), len(x), x) for x in sorted(entries, key=len, reverse=True)])[:5]:
                one = safe_plain(e, single_line=True)
                detail.append(f"  · {cid}  {chars:,} chars  {one[:60]}{'…' if len(one) > 60 else ''}")
    elif exc.code == "threat":
        ids = [str(x) for x in d.get("threats") or []]
        if not ids:
            ids = [str(f.get("id", "?")) if isinstance(f, dict) else str(getattr(f, "pattern_id", f)) for f in d.get("findings") or []]
        if ids:
            detail.append("findings: " + ", ".join(dict.fromkeys(ids)))
    elif exc.code == "ambiguous":
        for c in d.get("candidates") or []:
            if isinstance(c, dict):
                detail.append(f"  · {c.get('id', '?')}  {safe_plain(str(c.get('preview', '')), single_line=True)[:60]}")
    return WriteOutcome(False, safe_plain(exc.reason), exc.code, detail)


def success_outcome(result: Any, text: str) -> WriteOutcome:
    """A toast for a write that went through: ``text``, plus the target's usage afterwards for a
    memory write (a :class:`core.memory.WriteResult`). A no-op (``changed`` False, e.g. adding
    an entry that already exists) says that nothing changed, and why, instead."""
    changed = getattr(result, "changed", True)
    if changed is False:
        why = safe_plain(str(getattr(result, "message", "") or "the file already holds that"), single_line=True)
        return WriteOutcome(True, f"nothing changed: {why}", "noop")
    detail: list[str] = []
    chars, limit, target = (getattr(result, n, None) for n in ("chars", "limit", "target"))
    if isinstance(chars, int) and isinstance(limit, int) and limit > 0 and target in ("memory", "user"):
        from memdeck.core.text import percent_text

        detail.append(f"{_target_name(target)} now {chars:,}/{limit:,} chars ({percent_text(chars, limit)})")
    return WriteOutcome(True, text, "", detail)


def _target_name(target: str | None) -> str:
    return TARGET_FILES.get(target or "", "USER.md")


def _preview(text: str | None, n: int = 60) -> str:
    one = safe_plain(text or "", single_line=True)
    return one if len(one) <= n else one[: n - 1] + "…"


def _confirm(app: MemdeckApp, title: str, body: Text | str, then: Any, label: str = "Yes") -> None:
    from .screens.confirm import ConfirmScreen

    def done(ok: bool | None) -> None:
        if ok:
            then()

    app.push_screen(ConfirmScreen(title, body, confirm_label=label), done)


def _memory_store(app: MemdeckApp) -> Any:
    from memdeck.core.memory.store import MemoryStore

    return MemoryStore(app.home, app.config, actor="tui")


def _anchor_store(app: MemdeckApp) -> Any:
    from memdeck.core.anchors.store import AnchorStore

    return AnchorStore(app.home, app.config, actor="tui")


def _nothing(app: MemdeckApp, what: str) -> None:
    app.notify(f"select {what} first", severity="warning", markup=False, timeout=3)


def _selected(app: MemdeckApp, kinds: tuple[str, ...], what: str) -> Any:
    """The current selection when its kind is one of ``kinds``; else a warning toast and None."""
    sel = app.selection()
    if sel is not None and sel.kind == "pending" and "pending" not in kinds:
        # a pending write is not an entry yet: say what acts on it instead of "select an entry"
        app.notify("this is a pending write, not an entry yet: A approves it (then a/m act on the entry), "
                   "e edits it before approving, X rejects it", title="pending write", severity="warning",
                   markup=False, timeout=5)
        return None
    if sel is None or sel.kind not in kinds:
        _nothing(app, what)
        return None
    return sel


def _question(lead: str, name: str, rest: str, text: str | None, n: int = 200) -> Text:
    """A confirmation body: ``lead`` + ``name`` (bold, escaped) + ``rest``, then a preview of
    ``text`` (at most ``n`` chars, escaped)."""
    body = Text(lead)
    body.append_text(safe_text(name, single_line=True, style="bold"))
    body.append(rest)
    body.append_text(safe_text(_preview(text, n)))
    return body


#: Seconds the pin dialog's what-if may spend replaying compactions (newest first).
WHAT_IF_BUDGET_S = 3.0


# ── p / u ──────────────────────────────────────────────────────────────────


@toast_on_error
def action_pin(self: MemdeckApp, text: str | None = None, session_id: str | None = None) -> None:
    """Pin the selected entry as an anchor, or new text, in the shown session (modal). ``text``
    and ``session_id`` pre-fill the dialog and choose the session instead (the Constraints
    screen's repair of a lost or weakened rule: the user's own words); the what-if replay runs
    while the dialog is shown, before anything is written."""
    from .screens.editors import PinScreen

    if text is None:
        sel = self.selection()
        text = sel.text if sel is not None and sel.kind == "entry" else ""
    sid = session_id or getattr(self.snapshot, "session_id", None) or self.session_id
    if not sid:
        self.notify("no session to pin into: no live session and no MemLock session file (press s)",
                    severity="warning", markup=False)
        return

    def done(values: dict[str, Any] | None) -> None:
        if not values:
            return

        def op() -> Any:
            return _anchor_store(self).pin(values["text"], priority=values["priority"], probes=values["probes"],
                                           reminder=values.get("reminder") or None, scope=values["scope"], session_id=sid)

        self.run_write("pin", op, lambda a: f"pinned {a.id} (priority {a.priority}, {values['scope']}) in {sid}")

    home, config = self.home, self.config

    def replay(text: str, probes: list[str] | None, priority: int) -> Any:
        """The what-if of the text being typed (core/anchors/whatif.py), on the dialog's worker:
        its own read-only state.db reader, the newest compactions first within a few seconds."""
        from memdeck.core.anchors.store import AnchorStore
        from memdeck.core.anchors.whatif import what_if
        from memdeck.core.sessions.statedb import StateDB

        with StateDB(home.state_db) as db:
            return what_if(db, AnchorStore(home, config), sid, text, probes=probes, priority=priority,
                           config=config, budget_s=WHAT_IF_BUDGET_S)

    self.push_screen(PinScreen(text, self.config, what_if=replay), done)


@toast_on_error
def action_unpin(self: MemdeckApp) -> None:
    sel = _selected(self, ("anchor",), "a pinned anchor in Anchors")
    if sel is None:
        return
    aid, sid = sel.anchor_id, sel.session_id
    is_global = aid in getattr(self.snapshot, "global_ids", frozenset())
    body = _question("Unpin ", aid or "", f" from session {safe_plain(sid or '', single_line=True)}?\n", sel.text)
    if is_global:
        body.append("\nIt is a global pin: its durable copy in memlock/persist is removed too.", "yellow")

    def op() -> Any:
        return _anchor_store(self).unpin(aid, session_id=sid, scope="global" if is_global else None)

    _confirm(self, "Unpin anchor", body, lambda: self.run_write("unpin", op, f"unpinned {aid}"), "Unpin")


# ── a / R ──────────────────────────────────────────────────────────────────


@toast_on_error
def action_archive(self: MemdeckApp) -> None:
    sel = _selected(self, ("entry", "anchor"), "an entry (Capacity, Review) or an anchor (Anchors)")
    if sel is None:
        return
    if sel.kind == "anchor":
        aid, sid = sel.anchor_id, sel.session_id
        body = _question("Archive anchor ", aid or "", "? It leaves the session; R restores it.\n", sel.text)

        def op_a() -> Any:
            return _anchor_store(self).archive(aid, sid, reason="archived from the dashboard")

        _confirm(self, "Archive anchor", body,
                 lambda: self.run_write("archive", op_a, lambda rid: f"archived anchor {aid} (archive #{rid}); R restores it"),
                 "Archive")
        return
    target, text = sel.target, sel.text or ""
    body = Text(f"Archive this {_target_name(target)} entry ({len(text):,} chars)? R restores it.\n")
    body.append_text(safe_text(_preview(text, 300)))
    body.append_text(_archive_what_if(self, target, text))

    selector = getattr(sel.obj, "id", None) or text

    def op_e() -> Any:
        return _memory_store(self).archive(target, selector, reason="archived from the dashboard")

    _confirm(self, "Archive entry", body,
             lambda: self.run_write("archive", op_e, lambda r: f"archived a {_target_name(target)} entry "
                                    f"(archive #{getattr(r, 'archive_id', '?')}, {len(text):,} chars freed); R restores it"),
             "Archive")


def _archive_what_if(app: MemdeckApp, target: str | None, text: str) -> Text:
    """How archiving ``text`` moves the next session's frozen block (``core/context/whatif.py``)."""
    from memdeck.core.context.whatif import what_if

    from .screens.editors import running_note, what_if_text

    state = getattr(app.snapshot, "memory", {}).get(target) if app.snapshot is not None else None
    entries = [e.text for e in getattr(state, "entries", ()) or ()]
    if target not in ("memory", "user") or text not in entries:
        return Text()
    w = what_if(target, entries, int(app.config.char_limit(target)), remove=text)
    return Text("\n\n").append_text(what_if_text(w.lines(), running_note(app, target, -(len(text) + 3)),
                                                  heading="if you archive it"))


@toast_on_error
def action_restore(self: MemdeckApp) -> None:
    """Pick an archived entry or anchor and restore it."""
    from .screens.pickers import PickerScreen

    snap = self.snapshot
    archived = list(getattr(snap, "archived", ()) or ())
    if not archived:
        self.notify("the archive is empty: nothing to restore", markup=False, timeout=3)
        return
    # an archived entry already back in its file (History reverted the archive, or a writer added
    # the same text again) is not offered: restoring it would only mark the row (issue 39 #12)
    back = {str(_rget(r, "archive_id", "id")): where for r in archived if (where := _already_back(snap, r))}
    records = [r for r in archived if str(_rget(r, "archive_id", "id")) not in back]
    if not records:
        said = "; ".join(f"#{rid} is already back in {where}" for rid, where in back.items())
        self.notify(f"nothing to restore: {said} (History reverted its archive, or a writer added it again)",
                    markup=False, timeout=5)
        return
    options = []
    for rec in records:
        options.append((str(_rget(rec, "archive_id", "id")), _archive_label(rec)))
    sel = self.selection()
    preselect = None
    if sel is not None and sel.kind == "archived":  # an archived row in Anchors: offer that one first
        preselect = str(_rget(sel.obj, "archive_id", "id"))

    def done(rid: str | None) -> None:
        if not rid:
            return
        rec = next((r for r in records if str(_rget(r, "archive_id", "id")) == rid), None)
        kind = str(_rget(rec, "kind") or "memory")
        if kind == "anchor":
            def op() -> Any:
                return _anchor_store(self).restore(rid)

            self.run_write("restore", op, lambda a: f"restored anchor {a.id} from archive #{rid}")
        else:
            def op2() -> Any:
                return _memory_store(self).restore(int(rid))

            self.run_write("restore", op2, lambda r: f"restored a {_target_name(getattr(r, 'target', None))} entry "
                                                    f"from archive #{rid}")

    self.push_screen(PickerScreen("Restore from the archive", options, selected=preselect), done)


def _already_back(snap: Any, rec: Any) -> str | None:
    """The file name when ``rec`` (an archived memory entry) is already in its file again, with
    the same text; else None (an anchor, an unreadable file, a text not there)."""
    if str(_rget(rec, "kind") or "memory") != "memory":
        return None
    target = _rget(rec, "target")
    state = (getattr(snap, "memory", None) or {}).get(target) if target else None
    entries = getattr(state, "entries", None) if state is not None else None
    if not entries or getattr(state, "error", None):
        return None
    text = str(_rget(rec, "text") or "")
    return _target_name(target) if any(getattr(e, "text", e) == text for e in entries) else None


def _rget(rec: Any, *names: str) -> Any:
    for n in names:
        v = rec.get(n) if isinstance(rec, dict) else getattr(rec, n, None)
        if v is not None:
            return v
    return None


def _archive_label(rec: Any) -> Text:
    kind = str(_rget(rec, "kind") or "memory")
    payload = _rget(rec, "payload") or {}
    t = Text(no_wrap=True, overflow="ellipsis")
    if kind == "anchor":
        a = payload.get("anchor", {}) if isinstance(payload, dict) else {}
        t.append("anchor  ", "cyan")
        t.append_text(safe_text(str(a.get("id", "")), single_line=True, style="bold"))
        t.append("  ")
        t.append_text(safe_text(_preview(str(a.get("text", "")), 70)))
    else:
        target = _rget(rec, "target") or (payload.get("target") if isinstance(payload, dict) else None)
        text = _rget(rec, "text", "content") or (payload.get("text") or payload.get("content") if isinstance(payload, dict) else "")
        t.append(f"{'MEMORY' if target == 'memory' else 'USER'}  ", "green")
        t.append_text(safe_text(_preview(str(text or ""), 80)))
    return t


# ── e / n / m ──────────────────────────────────────────────────────────────


@toast_on_error
def action_edit(self: MemdeckApp) -> None:
    from .screens.editors import AnchorEditScreen, EntryEditScreen

    sel = _selected(self, ("entry", "anchor", "pending"), "an entry, an anchor or a pending write")
    if sel is None:
        return
    if sel.kind == "pending":
        _edit_pending(self, sel)
        return
    if sel.kind == "anchor":
        aid, sid = sel.anchor_id, sel.session_id

        def done_a(values: dict[str, Any] | None) -> None:
            if not values:
                return

            def op() -> Any:
                return _anchor_store(self).update(aid, text=values["text"], reminder=values.get("reminder"),
                                                  priority=values["priority"], probes=values["probes"], session_id=sid)

            self.run_write("edit", op, f"updated anchor {aid}")

        self.push_screen(AnchorEditScreen(sel.obj, self.config), done_a)
        return
    target, old = sel.target or "memory", sel.text or ""
    selector = getattr(sel.obj, "id", None) or old

    def done(values: dict[str, Any] | None) -> None:
        if not values:
            return
        new = values["text"]

        def op() -> Any:
            return _memory_store(self).replace(target, selector, new)

        self.run_write("edit", op, f"saved the {_target_name(target)} entry ({len(new.strip()):,} chars)")

    self.push_screen(EntryEditScreen(self.home, self.config, target, old, title=f"Edit {_target_name(target)} entry"), done)


@toast_on_error
def action_new_entry(self: MemdeckApp) -> None:
    from .screens.editors import EntryEditScreen

    sel = self.selection()
    target = sel.target if sel is not None and sel.target in ("memory", "user") else "memory"

    def done(values: dict[str, Any] | None) -> None:
        if not values:
            return
        tgt, text = values["target"], values["text"]

        def op() -> Any:
            return _memory_store(self).add(tgt, text)

        self.run_write("new entry", op, f"added a {_target_name(tgt)} entry ({len(text):,} chars)")

    self.push_screen(EntryEditScreen(self.home, self.config, target, "", title="New entry", choose_target=True), done)


@toast_on_error
def action_move(self: MemdeckApp) -> None:
    sel = _selected(self, ("entry",), "an entry in Capacity or Review")
    if sel is None:
        return
    src = sel.target or "memory"
    dst = "user" if src == "memory" else "memory"
    selector = getattr(sel.obj, "id", None) or sel.text or ""

    def op() -> Any:
        return _memory_store(self).move(src, selector, dst)

    self.run_write("move", op, f"moved the entry from {_target_name(src)} to {_target_name(dst)}")


# ── A / X ──────────────────────────────────────────────────────────────────


@toast_on_error
def action_approve(self: MemdeckApp) -> None:
    sel = _selected(self, ("pending",), "a pending write in Review")
    if sel is None:
        return
    pid = sel.pending_id or ""

    def op() -> Any:
        from memdeck.core.memory.pending import approve

        return approve(self.home, self.config, pid, actor="tui")

    self.run_write("approve", op, lambda r: f"approved pending write {pid}: {_preview(sel.text, 50)} "
                                            f"→ {_target_name(getattr(r, 'target', sel.target))}")


def _edit_pending(self: MemdeckApp, sel: Any) -> None:
    """Edit before approve (Hermes PR #44966): the staged text in the entry dialog (live char
    budget, what-if and threat scan of the entry that would land), then the edited write applied
    (``core/memory/review.py`` ``edit_and_approve``; the journal and History keep both texts)."""
    from memdeck.core.memory.entries import hermes_match
    from memdeck.core.memory.pending import Edit

    from .screens.editors import EntryEditScreen

    rec, pid = sel.obj, sel.pending_id or ""
    payload = getattr(rec, "payload", {}) or {}
    if payload.get("action") == "batch":
        self.notify(f"pending write {safe_plain(pid)} is a batch: edit one of its operations with `memdeck pending edit "
                    f"{safe_plain(pid)} TEXT --op N`, or approve it as staged (A)", title="edit before approve",
                    severity="warning", markup=False, timeout=8)
        return
    try:
        staged = Edit("x").staged_text(rec)
    except Refused as exc:
        self.notify(safe_plain(exc.reason), title="edit before approve", severity="warning", markup=False, timeout=6)
        return
    target = sel.target if sel.target in ("memory", "user") else "memory"
    entries = [e.text for e in getattr(self.snapshot.memory.get(target), "entries", ())] if self.snapshot else []
    act, old = payload.get("action"), str(payload.get("old_text") or "")
    replaces = payload.get("matched_entry") if isinstance(payload.get("matched_entry"), str) else None
    if act == "replace" and replaces is None and old.strip():
        m = hermes_match(entries, old.strip())
        replaces = entries[m] if isinstance(m, int) else None
    compose = None
    if act == "patch" and replaces is not None:
        pinned = replaces

        def compose(span: str) -> str:
            return pinned.replace(old, span, 1)

    def done(values: dict[str, Any] | None) -> None:
        if not values:
            return
        text = values["text"]

        def op() -> Any:
            from memdeck.core.memory.review import edit_and_approve

            return edit_and_approve(self.home, self.config, pid, text, actor="tui")

        self.run_write("approve", op, lambda r: f"approved pending write {pid} as edited: {_preview(text, 50)} "
                                                f"→ {_target_name(getattr(r, 'target', target))}")

    what = "the new text of the span" if act == "patch" else "the entry"
    self.push_screen(EntryEditScreen(self.home, self.config, target, staged, title=f"Edit pending write {pid} "
                                     f"({act}: {what}), then approve", replaces=replaces, compose=compose,
                                     allow_unchanged=True, save_label="Approve"), done)


def _bulk_toast(summary: Any) -> str:
    """The toast of a bulk action: the summary, then each refused record and why (first five)."""
    lines = [summary.message()]
    for o in [o for o in summary.outcomes if o.outcome == "refused"][:5]:
        lines.append(f"refused {o.id}: {_preview(o.reason or o.code or '', 90)}")
    return "\n".join(lines)


@toast_on_error
def action_approve_clean(self: MemdeckApp) -> None:
    """Approve every clean pending write (asks first): each its own journaled write, re-checked as it
    is applied (``core/memory/review.py`` ``approve_all_clean``)."""
    items = list(getattr(self.snapshot, "review", ()) if self.snapshot is not None else ())
    clean = [i for i in items if i.state == "clean"]
    if not clean:
        self.notify("no clean pending write to approve (stale, refused and other subsystems' records are left)",
                    markup=False, timeout=4)
        return
    others = len(items) - len(clean)
    body = Text(f"Approve {len(clean)} clean pending write{'s' if len(clean) != 1 else ''}, oldest first?\n")
    body.append("Each is applied on its own, journaled and undoable; one that turned stale meanwhile is refused, "
                "not applied.", "dim")
    if others:
        body.append(f"\n{others} other record{'s' if others != 1 else ''} (stale, refused, another subsystem's) "
                    f"{'stay' if others != 1 else 'stays'} as {'they are' if others != 1 else 'it is'}.", "dim")
    provider = self.snapshot.provider.name if self.snapshot is not None and self.snapshot.provider else None
    from .views.context import cost_note

    added = sum(len(getattr(i, "text", "") or "") + 3 for i in clean)
    cost = cost_note(self.snapshot, "memory", added)  # issue 37: said before writing, once for the batch
    if cost:
        body.append("\n")
        body.append_text(safe_text(cost, style="dim"))

    def op() -> Any:
        from memdeck.core.memory.review import approve_all_clean

        return approve_all_clean(self.home, self.config, actor="tui", provider=provider)

    _confirm(self, "Approve all clean", body, lambda: self.run_write("approve_clean", op, _bulk_toast), "Approve all")


@toast_on_error
def action_reject_stale(self: MemdeckApp) -> None:
    """Reject every stale pending write (asks first): each journaled and undoable (z stages the last
    one again)."""
    items = list(getattr(self.snapshot, "review", ()) if self.snapshot is not None else ())
    stale = [i for i in items if i.state == "stale"]
    if not stale:
        self.notify("no stale pending write: every record's entry is still as it was staged", markup=False, timeout=4)
        return
    body = Text(f"Reject {len(stale)} stale pending write{'s' if len(stale) != 1 else ''}?\n")
    for i in stale[:6]:
        body.append_text(safe_text(f"{i.id}: {_preview(i.reason or '', 90)}", single_line=True, style="dim"))
        body.append("\n")
    body.append("Each is journaled; z stages the last one again.", "dim")
    provider = self.snapshot.provider.name if self.snapshot is not None and self.snapshot.provider else None

    def op() -> Any:
        from memdeck.core.memory.review import reject_all_stale

        return reject_all_stale(self.home, self.config, actor="tui", provider=provider)

    _confirm(self, "Reject all stale", body, lambda: self.run_write("reject_stale", op, _bulk_toast), "Reject all")


@toast_on_error
def action_reject(self: MemdeckApp) -> None:
    sel = _selected(self, ("pending",), "a pending write in Review")
    if sel is None:
        return
    pid = sel.pending_id or ""
    body = _question("Reject pending write ", pid, "? It is discarded and never applied.\n", sel.text, 300)

    def op() -> Any:
        from memdeck.core.memory.pending import reject

        return reject(self.home, pid, actor="tui")

    _confirm(self, "Reject pending write", body, lambda: self.run_write("reject", op, f"rejected pending write {pid}"), "Reject")


# ── z ──────────────────────────────────────────────────────────────────────


def describe_change(rows: list[Any]) -> str:
    """One line naming a journaled change (its op and target) for the undo dialog and toast.

    ``rows`` are the :class:`core.journal.JournalRow` rows of one change (one ``txn``), oldest
    first. Anchor rows name the anchor (``detail["anchor_id"]``) and its session (``session_id``,
    or the global pins when None);
    memory rows name the file and preview the entry text (``detail["text"]``); approvals name
    the pending write (``detail["pending_id"]``).
    """
    last = rows[-1]
    d = last.detail if isinstance(last.detail, dict) else {}
    if last.kind == "anchor":
        where = "global pins" if last.session_id is None else f"session {last.session_id}"
        what = f"{last.op} of anchor {d.get('anchor_id', '?')} ({where})"
    elif last.kind == "memory":
        if last.op == "move" and d.get("from") and d.get("to"):
            what = f"move from {_target_name(d['from'])} to {_target_name(d['to'])}"
        else:
            what = f"{last.op} in {_target_name(last.target)}"
        if d.get("text"):
            what += f": “{_preview(str(d['text']), 50)}”"
        if last.op == "reject" and d.get("pending_id"):
            what = f"reject of pending write {d['pending_id']} (undo stages it again)"
        elif d.get("pending_id"):
            what += f" (approved pending write {d['pending_id']})"
    elif last.kind == "request":
        what = (f"{last.op} request #{d.get('request_id', '?')} for session {last.session_id} "
                "(cancelled if not yet delivered)")
    else:
        what = f"{last.op} ({last.kind} {last.where})"
    what += f" · journal #{last.journal_id}"
    return safe_plain(what, single_line=True)


@toast_on_error
def action_undo(self: MemdeckApp) -> None:
    """Undo the most recent memdeck change recorded in the journal (asks first).

    The dialog names the change (:func:`describe_change`); if by the time the user confirms
    another change has become the most recent one, the undo is refused rather than undoing
    something the dialog did not show.
    """
    from memdeck.core.deck import journal
    from memdeck.core.undo import undo

    rows = journal.last_undoable(self.home)
    if not rows:
        self.notify("nothing to undo: the journal has no change that is not already undone", markup=False, timeout=3)
        return
    last = rows[-1]
    shown = [r.journal_id for r in rows]
    what = describe_change(rows)
    body = Text("Undo the last memdeck change?\n")
    body.append(what, "bold")
    body.append(f"\nby {last.actor}", "dim")
    if len(rows) > 1:
        body.append(f" · {len(rows)} journal rows in one change", "dim")

    def op() -> Any:
        now = [r.journal_id for r in journal.last_undoable(self.home)]
        if now != shown:
            raise Refused("another change was recorded after this dialog opened; nothing was undone "
                          "(press z again to see the latest change)", "conflict")
        return undo(self.home, self.config, actor="tui")

    _confirm(self, "Undo", body, lambda: self.run_write("undo", op, f"undid {what}"), "Undo")


@toast_on_error
def action_revert(self: MemdeckApp) -> None:
    """Revert the change selected in History, whoever made it (asks first): the core puts the
    old text back under the lock, or refuses and says why (it no longer applies, it would
    overflow: then it names what could be archived)."""
    from memdeck.core.history.reverting import revert

    sel = _selected(self, ("change",), "a change in History")
    if sel is None:
        return
    c = sel.obj
    body = Text(f"Revert change {c.change_id} ({c.op} in ")
    body.append_text(safe_text(c.where, single_line=True, style="bold"))
    body.append(")?\n")
    body.append_text(safe_text(_preview(c.before or c.after, 200)))

    def op() -> Any:
        return revert(self.home, self.config, c.change_id, actor="tui")

    _confirm(self, "Revert", body,
             lambda: self.run_write("revert", op, lambda r: safe_plain(str(r.get("message") or f"reverted change {c.change_id}"))),
             "Revert")


# ── / s P ──────────────────────────────────────────────────────────────────


@toast_on_error
def action_filter(self: MemdeckApp) -> None:
    self.panel().open_filter()


@toast_on_error
def action_pick_session(self: MemdeckApp) -> None:
    from .screens.pickers import PickerScreen

    snap = self.snapshot
    options: list[tuple[str, Text]] = []
    seen: set[str] = set()
    for s in getattr(snap, "sessions", ()) or ():
        sid = str(getattr(s, "id", ""))
        if not sid or sid in seen:
            continue
        seen.add(sid)
        t = Text(no_wrap=True, overflow="ellipsis")
        t.append("● " if getattr(s, "live", False) else "  ", "green")
        t.append_text(safe_text(sid, single_line=True, style="bold"))
        title = getattr(s, "title", None)
        if title:
            t.append("  ")
            t.append_text(safe_text(title, single_line=True, max_chars=40))
        t.append(f"  {getattr(s, 'source', '')} · {getattr(s, 'message_count', 0)} msgs", "dim")
        if getattr(s, "compactions", 0):
            t.append(f" · {s.compactions} compactions", "dim")
        options.append((sid, t))
    for info in getattr(snap, "anchor_sessions", ()) or ():
        sid = info.session_id
        if sid in seen:
            continue
        seen.add(sid)
        t = Text("  ", no_wrap=True, overflow="ellipsis")
        t.append_text(safe_text(sid, single_line=True, style="bold"))
        t.append("  MemLock file only", "dim")
        options.append((sid, t))
    if not options:
        from memdeck.core.sessions.profile import session_store_note

        note = session_store_note(getattr(snap, "config", None))
        self.notify(note or "no sessions: no state.db sessions and no MemLock session files", markup=False)
        return

    def done(sid: str | None) -> None:
        if sid:
            self.session_id = sid
            self.notify(f"showing session {safe_plain(sid, single_line=True)}", markup=False, timeout=3)
            self.request_refresh(force=True)

    self.push_screen(PickerScreen("Show session", options, selected=getattr(snap, "session_id", None)), done)


@toast_on_error
def action_pick_profile(self: MemdeckApp) -> None:
    from memdeck.core.home import list_profiles, root_of

    from .screens.pickers import PickerScreen

    homes = list_profiles(root_of(self.home.path))
    options = []
    for h in homes:
        t = Text(no_wrap=True, overflow="ellipsis")
        t.append_text(safe_text(h.profile, single_line=True, style="bold"))
        t.append("  ")
        t.append_text(safe_text(str(h.path), single_line=True, style="dim"))
        options.append((str(h.path), t))

    def done(path: str | None) -> None:
        if not path:
            return
        h = next((x for x in homes if str(x.path) == path), None)
        if h is not None and h.path != self.home.path:
            self.switch_home(h)
            self.notify(f"profile {safe_plain(h.profile)}", markup=False, timeout=3)

    self.push_screen(PickerScreen("Switch profile", options, selected=str(self.home.path)), done)


@toast_on_error
def action_rebuild(self: MemdeckApp) -> None:
    """``b`` in the Context panel: rebuild the selected open session's system prompt (else the
    followed session's) through Hermes at its next turn; the dialog states the cost first
    (:class:`tui.screens.requests.RebuildScreen`). Queued in memdeck.db, journaled: z undoes it
    until the plugin delivers it."""
    from memdeck.core.requests.queue import queue_rebuild

    from .screens.requests import RebuildScreen

    sel = self.selection()
    sid = getattr(sel, "session_id", None) if sel is not None and sel.kind == "context" else None
    if not sid:
        view = getattr(self.snapshot, "agent_view", None)
        sid = getattr(view, "followed", None)
    if not sid:
        self.notify("no open session to rebuild (select one in Context, or press s)", severity="warning",
                    markup=False, timeout=4)
        return

    def done(cost: Any) -> None:
        if cost is None:
            return

        def op() -> Any:
            return queue_rebuild(self.home, cost.session_id, actor="tui", prompt_tokens=cost.prompt_tokens)

        self.run_write("rebuild", op, lambda r: safe_plain(
            f"rebuild of {cost.session_id} queued (request #{r.request_id}): at its next turn Hermes rebuilds the "
            f"prompt, ~{cost.prompt_tokens:,} tokens written to the provider's cache once", single_line=True))

    self.push_screen(RebuildScreen(str(sid)), done)


class DeckActions:
    """The dashboard's write and picker actions, as a mixin of :class:`tui.app.MemdeckApp`
    (Textual finds ``action_<name>`` on the app): each opens a dialog or runs one core write
    through the app's write worker, and reports through toasts, never a traceback."""

    action_pin = action_pin
    action_unpin = action_unpin
    action_archive = action_archive
    action_restore = action_restore
    action_edit = action_edit
    action_new_entry = action_new_entry
    action_move = action_move
    action_approve = action_approve
    action_approve_clean = action_approve_clean
    action_reject = action_reject
    action_reject_stale = action_reject_stale
    action_undo = action_undo
    action_revert = action_revert
    action_rebuild = action_rebuild
    action_filter = action_filter
    action_pick_session = action_pick_session
    action_pick_profile = action_pick_profile
