"""The Constraints screen (``L`` in the Drift log, issue 34): what one compaction of the shown
session did to every rule the user gave (kept, weakened, lost, promoted, orphan), each with its
source turn and evidence (``core/constraints``, computed in a worker). The keyword method by
default (milliseconds); ``m`` recomputes with the semantic method when its extra is installed.
``p`` on a lost or weakened rule opens the pin dialog with the user's own words; ``c`` on a promoted
summary line queues a one-time correction for the session's next user turn (asks first, showing the
exact line; memdeck's plugin sends it once; ``z`` undoes it until then)."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Static

from ..views.constraints import item_detail, item_row, ledger_title, repairable
from .modal import Dialog


class LedgerReady(Message):
    """The worker computed the ledger (``memdeck constraints --json``'s shape) or ``error``."""

    def __init__(self, ledger: dict[str, Any] | None, error: str | None = None, note: str | None = None) -> None:
        super().__init__()
        self.ledger = ledger
        self.error = error
        self.note = note


def compute_ledger(home: Any, config: Any, session_id: str, compaction: int | None, semantic: bool) -> dict[str, Any]:
    """The ledger of compaction ``compaction`` (1-based) of ``session_id``, else of its newest;
    ``compactions`` is empty when the session has none. Read-only on state.db.

    Raises:
        memdeck.core.errors.Refused: no state.db, or one that cannot be read.
    """
    from memdeck.core.constraints.ledger import session_ledger
    from memdeck.core.errors import Refused
    from memdeck.core.sessions.statedb import StateDB

    if not home.state_db.exists():
        raise Refused("no state.db in this home: there are no compactions to read", code="no_statedb")
    with StateDB(home.state_db) as db:
        status = db.status()
        if status.state != "ok":
            raise Refused(f"state.db cannot be read ({status.state}): {status.message}", code="unreadable")
        indexes = [e.index for e in db.compactions(session_id) if e.session_id == session_id]
        if compaction is None or compaction not in indexes:
            compaction = max(indexes) if indexes else None
        if compaction is None:
            return {"session_id": session_id, "method": "keyword", "compactions": []}
        return session_ledger(db, home, config, session_id, compaction=compaction, semantic=semantic)


class ConstraintsScreen(Dialog[None]):
    """One compaction's ledger: a row per item, its evidence below; ``p`` repairs a lost or
    weakened rule (the pin dialog), ``m`` asks for the semantic method, escape closes."""

    BINDINGS = [
        Binding("escape,q,L", "close", "Close", id="constraints.close"),
        Binding("p", "repair", "Pin rule", id="constraints.pin"),
        Binding("c", "correct", "Correct", id="constraints.correct"),
        Binding("m", "semantic", "Semantic", id="constraints.semantic"),
    ]

    def __init__(self, session_id: str, compaction: int | None = None) -> None:
        super().__init__()
        self.session_id = session_id
        self.compaction = compaction
        self.semantic = False
        self.ledger: dict[str, Any] | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="constraints-box", classes="dialog"):
            yield Static(ledger_title(self.session_id, None, "keyword"), id="constraints-title", classes="dialog-title")
            yield Static(Text("reading the compaction's rules and summary…", style="dim"), id="constraints-summary")
            table: DataTable[Text] = DataTable(id="constraints-table", cursor_type="row", zebra_stripes=True)
            table.add_columns("verdict", "rule / summary line", "turn")
            yield table
            yield Static(id="constraints-detail")
            yield Static(Text("p: pin a lost or weakened rule (asks first) · c: correct a promoted line once "
                              "(asks first) · m: semantic matching · esc: close", style="dim"))

    def on_mount(self) -> None:
        self.query_one(DataTable).focus()
        self._compute()

    @work(thread=True, exclusive=True, exit_on_error=False, group="constraints")
    def _compute(self) -> None:
        app: Any = self.app
        note = None
        semantic = self.semantic
        if semantic:
            from memdeck.core.anchors.encoder import package_model_folder

            if package_model_folder() is None:
                semantic = False
                note = "the semantic extra is not installed (pip install 'memdeck[semantic]'): keyword matching"
        try:
            ledger = compute_ledger(app.home, app.config, self.session_id, self.compaction, semantic)
        except Exception as exc:  # noqa: BLE001 - shown on the screen, never a crash
            reason = getattr(exc, "reason", None) or f"{type(exc).__name__}: {exc}"
            self.post_message(LedgerReady(None, str(reason)))
            return
        if semantic and ledger.get("method") != "semantic":
            note = "the semantic model cannot be loaded: keyword matching"
        self.post_message(LedgerReady(ledger, note=note))

    @property
    def comp(self) -> dict[str, Any] | None:
        comps = (self.ledger or {}).get("compactions") or []
        return comps[-1] if comps else None

    def on_ledger_ready(self, message: LedgerReady) -> None:
        summary = self.query_one("#constraints-summary", Static)
        if message.error is not None:
            summary.update(Text(f"the ledger could not be read: {message.error}", style="red"))
            return
        self.ledger = message.ledger
        comp = self.comp
        method = str((message.ledger or {}).get("method", "keyword"))
        self.query_one("#constraints-title", Static).update(ledger_title(self.session_id, comp, method))
        if comp is None:
            summary.update(Text("this session has no compaction in state.db: nothing was summarised away", style="dim"))
        else:
            self.compaction = int(comp["compaction_id"])
            found = "" if comp.get("summary_found", True) else " · no summary row found"
            text = f"{len(comp['items'])} items{found}"
            summary.update(Text(text + (f" · {message.note}" if message.note else ""),
                                style="yellow" if message.note else ""))
        table = self.query_one(DataTable)
        table.clear()
        for n, it in enumerate(comp["items"] if comp else ()):
            table.add_row(*item_row(it), key=str(n))
        self._show()

    @property
    def selected(self) -> dict[str, Any] | None:
        comp = self.comp
        if comp is None or not comp["items"]:
            return None
        row = self.query_one(DataTable).cursor_row
        return comp["items"][row] if 0 <= row < len(comp["items"]) else None

    @on(DataTable.RowHighlighted)
    def _show(self, _event: Any = None) -> None:
        self.query_one("#constraints-detail", Static).update(item_detail(self.selected) if self.ledger else Text(""))

    def action_close(self) -> None:
        self.dismiss(None)

    def action_semantic(self) -> None:
        if self.semantic:
            self.app.notify("already semantic matching", markup=False, timeout=3)
            return
        self.semantic = True
        self.query_one("#constraints-summary", Static).update(Text("recomputing with semantic matching…", style="dim"))
        self._compute()

    def action_repair(self) -> None:
        item = self.selected
        if not repairable(item):
            self.app.notify("p pins a lost or weakened rule: select one", markup=False, timeout=3)
            return
        app: Any = self.app
        if app.read_only:
            app.notify(app.READ_ONLY_MESSAGE, title="pin: refused", severity="warning", markup=False, timeout=4)
            return
        assert item is not None
        app.action_pin(str(item["rule"]), self.session_id)

    def action_correct(self) -> None:
        """``c`` on a promoted line: queue ``The instruction '...' applied to one operation only; it
        is not a standing rule.`` for this session's next user turn (issue 34 #3), after a
        confirmation that shows the exact line."""
        from memdeck.core.requests.queue import correction_line, queue_correction

        from ..safe_text import safe_text
        from .confirm import ConfirmScreen

        item = self.selected
        if item is None or item.get("verdict") != "promoted":
            self.app.notify("c corrects a promoted summary line: select one", markup=False, timeout=3)
            return
        app: Any = self.app
        if app.read_only:
            app.notify(app.READ_ONLY_MESSAGE, title="correct: refused", severity="warning", markup=False, timeout=4)
            return
        instruction = str(item.get("rule") or item.get("summary_line") or "")
        sid, comp = self.session_id, self.compaction
        body = Text("At its next user turn, session ")
        body.append_text(safe_text(sid, single_line=True, style="bold"))
        body.append(" gets this line once (memdeck's plugin appends it to the turn; the system prompt is "
                    "untouched):\n\n")
        body.append_text(safe_text(correction_line(instruction), style="bold"))
        body.append("\n\nz undoes it until it is delivered.", "dim")

        def done(ok: bool | None) -> None:
            if not ok:
                return

            def op() -> Any:
                return queue_correction(app.home, sid, instruction, actor="tui", compaction_id=comp,
                                        summary_line=item.get("summary_line"))

            app.run_write("correction", op, lambda r: f"correction queued for {sid}'s next turn (request #{r.request_id})")

        app.push_screen(ConfirmScreen("Correct a promoted line", body, confirm_label="Queue"), done)
