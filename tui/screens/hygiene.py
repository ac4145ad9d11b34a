"""The Hygiene screen (``H``): duplicates, contradictions, stale and wasteful entries ranked by
the chars they cost on every turn, each with its evidence and the next session's block diff its
proposal makes (``core/hygiene``, found in a worker). Nothing is applied without a key and a
confirmation; each apply is one journaled change through the locked core (``z`` undoes it)."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Static

from ..views.hygiene import block_diff, finding_detail, finding_row
from .modal import Dialog


class HygieneReady(Message):
    """The worker found the home's hygiene report (or ``error``)."""

    def __init__(self, report: Any, error: str | None = None) -> None:
        super().__init__()
        self.report = report
        self.error = error


class HygieneScreen(Dialog[None]):
    """Lists the findings; enter applies the selected proposal (asks first), 1/2 keeps a
    contradiction's side, e edits a merge's text first, escape closes."""

    BINDINGS = [
        Binding("escape,q,H", "close", "Close", id="hygiene.close"),
        Binding("enter", "apply", "Apply", id="hygiene.apply", priority=True),  # before the table's own enter
        Binding("e", "edit_merge", "Edit merge", id="hygiene.edit"),
        Binding("1", "keep(1)", "Keep 1", id="hygiene.keep1", show=False),
        Binding("2", "keep(2)", "Keep 2", id="hygiene.keep2", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.report: Any = None
        self.merged: dict[str, str] = {}

    def compose(self) -> ComposeResult:
        with Vertical(id="hygiene-box", classes="dialog"):
            yield Static(Text("Memory hygiene", style="bold"), classes="dialog-title")
            yield Static(Text("looking for duplicates, contradictions, stale and wasteful entries…", style="dim"),
                         id="hygiene-summary")
            table: DataTable[Text] = DataTable(id="hygiene-table", cursor_type="row", zebra_stripes=True)
            table.add_columns("kind", "saves", "entries", "id")
            yield table
            yield Static(id="hygiene-detail")
            yield Static(Text("enter: apply (asks first) · 1/2: keep that side of a contradiction · e: edit a merge · "
                              "esc: close", style="dim"))

    def on_mount(self) -> None:
        self.query_one(DataTable).focus()
        self._find()

    @work(thread=True, exclusive=True, exit_on_error=False, group="hygiene")
    def _find(self) -> None:
        from memdeck.core.hygiene.detect import hygiene_report

        app: Any = self.app
        try:
            report = hygiene_report(app.home, app.config, now=app.clock())
        except Exception as exc:  # noqa: BLE001 - shown on the screen, never a crash
            self.post_message(HygieneReady(None, f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(HygieneReady(report))

    def on_hygiene_ready(self, message: HygieneReady) -> None:
        summary = self.query_one("#hygiene-summary", Static)
        if message.error is not None:
            summary.update(Text(f"hygiene could not run: {message.error}", style="red"))
            return
        self.report = r = message.report
        counts = ", ".join(f"{n} {k}" for k, n in r.counts().items())
        note = f" ({r.note})" if r.note else ""
        summary.update(Text(f"method: {r.method}{note} · {counts}" if r.findings else
                            f"method: {r.method}{note} · no findings: nothing to merge, archive or check"))
        table = self.query_one(DataTable)
        table.clear()
        for f in r.findings:
            table.add_row(*finding_row(f), key=f.id)
        self._show()

    @property
    def selected(self) -> Any:
        if self.report is None or not self.report.findings:
            return None
        table = self.query_one(DataTable)
        row = table.cursor_row
        return self.report.findings[row] if 0 <= row < len(self.report.findings) else None

    @on(DataTable.RowHighlighted)
    def _show(self, _event: Any = None) -> None:
        f = self.selected
        detail = self.query_one("#hygiene-detail", Static)
        detail.update(finding_detail(f, self.report.method, self.merged.get(f.id)) if f is not None else Text(""))

    def action_close(self) -> None:
        self.dismiss(None)

    def action_edit_merge(self) -> None:
        from .editors import EntryEditScreen

        f = self.selected
        if f is None or f.proposal.action != "merge" or f.proposal.keep is None:
            self.app.notify("e edits the merged text of a duplicate group", markup=False, timeout=3)
            return
        keep = f.proposal.keep

        def done(values: dict[str, Any] | None) -> None:
            if values:
                self.merged[f.id] = values["text"]
                self._show()

        app: Any = self.app
        self.app.push_screen(EntryEditScreen(app.home, app.config, keep.target, self.merged.get(f.id, keep.text),
                                             title="The merged entry", replaces=keep.text, allow_unchanged=True,
                                             save_label="Use"), done)

    def action_apply(self) -> None:
        f = self.selected
        if f is None:
            return
        if f.kind == "contradiction":
            self.app.notify("a contradiction: press 1 or 2 for the entry that stays", markup=False, timeout=4)
            return
        self._confirm(f, None)

    def action_keep(self, side: int) -> None:
        f = self.selected
        if f is None or f.kind != "contradiction":
            return
        self._confirm(f, side)

    def _confirm(self, f: Any, keep: int | None) -> None:
        from memdeck.core.hygiene.apply import apply_finding

        from ..safe_text import safe_text
        from .confirm import ConfirmScreen

        app: Any = self.app
        merged = self.merged.get(f.id)
        body = Text()
        if keep is not None:
            gone = f.entries[1 if keep == 1 else 0]
            body.append("archive ", style="bold")
            body.append_text(safe_text(f"[{gone.target}] {gone.text}", single_line=True, max_chars=120))
            body.append(f"\nand keep entry {keep}.")
        else:
            for sign, target, text in block_diff(f, merged):
                body.append(f"{sign} [{target}] ", style="red" if sign == "-" else "green")
                body.append_text(safe_text(text, single_line=True, max_chars=110))
                body.append("\n")
        body.append(f"\none journaled change; z puts it back. Frees about {f.chars_saved:,} chars per turn.", style="dim")

        def done(ok: bool | None) -> None:
            if not ok:
                return

            def op() -> Any:
                return apply_finding(app.home, app.config, f.id, text=merged, keep=keep, actor="tui", now=app.clock())

            app.run_write("hygiene", op, lambda r: f"hygiene {f.id}: {r.message}")
            self.dismiss(None)

        self.app.push_screen(ConfirmScreen(f"Apply hygiene {f.id}?", body, confirm_label="Apply"), done)
