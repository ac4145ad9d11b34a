"""The six panels. Each one renders a :class:`core.snapshot.DeckSnapshot` and nothing else.

A panel never reads or writes a file: it gets a snapshot in :meth:`Panel.show_snapshot`,
shows a banner when its sources failed, and reports what is selected (:meth:`Panel.selected`)
so the app's actions know what a key applies to. Every piece of data text goes through
:func:`tui.safe_text.safe_text`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import DataTable, Digits, Input, Static

from ..guard import guarded
from ..messages import RecallRequested, RowActionsRequested
from . import history_view
from ..safe_text import safe_text
from . import view
from .readout import Readout
from .table import DeckTable


@dataclass(frozen=True)
class Selection:
    """What a key applies to.

    Attributes:
        kind: ``"entry"`` (a memory entry), ``"anchor"``, ``"pending"`` (a pending write),
            ``"archived"`` (an archive row), ``"event"`` (a drift-log event).
        key: the row key.
        target: ``"memory"``/``"user"`` for entries and pending writes.
        text: the entry / anchor text.
        anchor_id, session_id, pending_id: ids when they apply.
        obj: the core object behind the row.
    """

    kind: str
    key: str
    target: str | None = None
    text: str | None = None
    anchor_id: str | None = None
    session_id: str | None = None
    pending_id: str | None = None
    obj: Any = None


class Banner(Static):
    """A one-line red banner saying which source of this panel failed (hidden when fine)."""

    DEFAULT_CSS = "Banner { display: none; }"

    def set(self, text: str | None) -> None:
        if text:
            self.update(safe_text("⚠ " + text, single_line=True))
            self.display = True
        else:
            self.display = False


def focus_now(widget: Any) -> None:
    """Focus ``widget`` before the next key is handled.

    ``Widget.focus()`` defers the change with ``call_later``, so keys already queued behind
    ``/`` (a fast typist, a paste) would still go to the table and fire its bindings; setting
    the screen's focus directly does not wait.
    """
    try:
        widget.screen.set_focus(widget)
    except Exception:
        widget.focus()


class Panel(Vertical):
    """Base of the panels.

    ``DEPENDS`` names the :class:`DeckSnapshot` fields a panel draws; when none of them changed
    since it was last drawn the app does not draw it again (a live home refreshes every few
    seconds; most refreshes touch one or two panels). Empty: always drawn.
    """

    can_focus = False
    filter_text: str = ""
    DEPENDS: tuple[str, ...] = ()
    _drawn: tuple[Any, ...] | None = None

    def drawn_from(self, snap: Any) -> tuple[Any, ...] | None:
        """What this panel draws from ``snap`` (compared with ``==`` to skip a redraw)."""
        if not self.DEPENDS:
            return None
        return (snap.config, snap.errors, snap.partial, *(getattr(snap, f, None) for f in self.DEPENDS))

    def needs_drawing(self, snap: Any) -> bool:
        """False when ``snap`` holds the same data for this panel as the one last drawn."""
        key = self.drawn_from(snap)
        try:
            same = key is not None and self._drawn is not None and key == self._drawn
        except Exception:  # a value that cannot be compared is drawn
            same = False
        self._drawn = key
        return not same
    BINDINGS = [Binding("escape", "clear_filter", "Clear filter", show=False, id="memdeck.clear_filter")]

    def action_clear_filter(self) -> None:
        self.clear_filter()

    def compose_banner(self) -> ComposeResult:
        yield Banner(id=f"{self.id}-banner", classes="banner")

    def compose_filter(self) -> ComposeResult:
        yield Input(placeholder="filter rows (esc clears)", id=f"{self.id}-filter", classes="filter")

    def show_banner(self, text: str | None) -> None:
        try:
            self.query_one(Banner).set(text)
        except Exception:
            pass

    def show_snapshot(self, snap: Any) -> None:
        raise NotImplementedError

    def selected(self) -> Selection | None:
        return None

    def primary(self) -> Any:
        try:
            return self.query_one(DeckTable)
        except Exception:
            return None

    def focus_primary(self) -> None:
        w = self.primary()
        if w is not None:
            w.focus()

    # filter
    def _filter_box(self) -> Input | None:
        try:
            return self.query_one(f"#{self.id}-filter", Input)
        except Exception:
            return None

    def open_filter(self) -> None:
        box = self._filter_box()
        if box is None:
            return
        box.display = True
        focus_now(box)

    @on(Input.Changed, ".filter")
    @guarded
    def _filter_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value
        snap = getattr(self.app, "snapshot", None)
        if snap is not None:
            self.show_snapshot(snap)

    @on(Input.Submitted, ".filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        self.focus_primary()

    def clear_filter(self) -> None:
        box = self._filter_box()
        if box is None:
            return
        box.value = ""
        box.display = False
        self.filter_text = ""
        self.focus_primary()

    def matches(self, *texts: Any) -> bool:
        f = self.filter_text.strip().lower()
        if not f:
            return True
        return any(f in str(t).lower() for t in texts if t is not None)

    @property
    def now(self) -> float:
        clock = getattr(self.app, "clock", None)
        return clock() if callable(clock) else time.time()


# ── Integrity ───────────────────────────────────────────────────────────────


class IntegrityPanel(Panel):
    DEPENDS = ("session_id", "audit", "compactions", "integrity_history", "db_status", "live_session",
               "session_anchors", "reminder_block", "hermes_profile")

    """The shown session's integrity score (large), its sparkline, floor and last compaction."""

    can_focus = True

    def compose(self) -> ComposeResult:
        yield from self.compose_banner()
        with Horizontal(id="integrity-top"):
            with Vertical(id="score-box"):
                yield Static(Text("integrity score", style="dim"), id="score-label")
                yield Digits("--", id="score")
            yield Readout(id="integrity-facts")
        yield Readout(id="integrity-health")
        yield Static(Text("score across compactions (0-100, oldest → newest)", style="dim"), id="spark-label")
        yield Readout(id="sparkline")
        yield Readout(id="integrity-anchors")
        yield Readout(id="integrity-reminder")

    def primary(self) -> Any:
        return self

    def show_snapshot(self, snap: Any) -> None:
        self.show_banner(snap.error_for("integrity"))
        score = view.current_score(snap)
        floor = int(snap.config.memlock.alert_floor)
        digits = self.query_one("#score", Digits)
        digits.update("--" if score is None else f"{score}")
        low = score is not None and score < floor
        self.set_class(low, "below-floor")
        self.set_class(score is not None and not low, "above-floor")
        self.query_one("#integrity-facts", Readout).show(view.integrity_facts(snap, self.now))
        width = max(10, (self.size.width or 60) - 2)
        self.query_one("#sparkline", Readout).show(view.sparkline(snap.integrity_history, floor, width))
        self.query_one("#integrity-anchors", Readout).show(view.anchor_summary(snap))
        self.query_one("#integrity-reminder", Readout).show(view.reminder_preview(snap))
        self.query_one("#integrity-health", Readout).show(view.hermes_health(snap))


# ── table + detail ──────────────────────────────────────────────────────────


class TableDetailPanel(Panel):
    """A filterable :class:`DeckTable` of rows with a detail pane for the row under the cursor.

    Subclasses give the table's ``COLUMNS`` and the snapshot ``SOURCE`` whose error shows in the
    banner, and implement :meth:`rows_for` (every row, each with ``key`` and ``cells``),
    :meth:`haystack` (the texts the filter searches), :meth:`detail_for` and
    :meth:`selection_for`. Widget ids derive from ``NAME``: ``{NAME}-table``,
    ``{NAME}-detail``.
    """

    NAME = ""
    SOURCE = ""
    COLUMNS: Sequence[tuple[str, str]] = ()
    #: shown (dim) in the detail pane when no row is selected; ``None`` asks
    #: :meth:`detail_for` with ``row=None`` instead.
    empty_detail: str | None = ""

    _rows: list[Any]
    _snap: Any = None

    def compose(self) -> ComposeResult:
        yield from self.compose_banner()
        yield from self.compose_header()
        yield from self.compose_filter()
        yield DeckTable(self.COLUMNS, id=f"{self.NAME}-table")
        with VerticalScroll(id=f"{self.NAME}-detail-box", classes="detail"):
            yield Readout(id=f"{self.NAME}-detail")

    def compose_header(self) -> ComposeResult:
        """Widgets between the banner and the filter (none by default)."""
        yield from ()

    def show_header(self, snap: Any) -> None:
        """Update what :meth:`compose_header` made (nothing by default)."""

    def rows_for(self, snap: Any) -> list[Any]:
        raise NotImplementedError

    def haystack(self, row: Any) -> Iterable[Any]:
        raise NotImplementedError

    def detail_for(self, row: Any, snap: Any) -> Any:
        raise NotImplementedError

    def selection_for(self, row: Any) -> Selection | None:
        raise NotImplementedError

    def show_snapshot(self, snap: Any) -> None:
        self.show_banner(snap.error_for(self.SOURCE))
        self._snap = snap
        self.show_header(snap)
        self._rows = [r for r in self.rows_for(snap) if self.matches(*self.haystack(r))]
        self.query_one(DeckTable).sync([(r.key, r.cells) for r in self._rows])
        self._show_detail()

    def _current(self) -> Any:
        key = self.query_one(DeckTable).selected_key
        for r in getattr(self, "_rows", []):
            if r.key == key:
                return r
        return None

    @guarded
    def _show_detail(self) -> None:
        snap = self._snap
        if snap is None:
            return
        r = self._current()
        if r is None and self.empty_detail is not None:
            out: Any = Text(self.empty_detail, style="dim")
        else:
            out = self.detail_for(r, snap)
        self.query_one(f"#{self.NAME}-detail", Readout).show(out)

    @on(DataTable.RowHighlighted)
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_detail()

    @on(DataTable.RowSelected)
    def _row_chosen(self, event: DataTable.RowSelected) -> None:
        """Enter (or a click) on a row: ask the app for the actions that row allows."""
        event.stop()
        sel = self.selected()
        if sel is not None:
            self.post_message(RowActionsRequested(sel))

    def selected(self) -> Selection | None:
        r = self._current()
        return None if r is None else self.selection_for(r)

    @property
    def rows(self) -> list[Any]:
        """The rows shown now (after the filter), top to bottom."""
        return list(getattr(self, "_rows", []))


# ── Anchors ─────────────────────────────────────────────────────────────────


class AnchorsPanel(TableDetailPanel):
    DEPENDS = ("session_id", "audit", "session_anchors", "global_ids", "archived")

    """One row per anchor, sorted as MemLock re-injects them (priority desc, id asc)."""

    NAME = SOURCE = "anchors"
    COLUMNS = [("state", "state"), ("pri", "pri"), ("probes", "probes"), ("scope", "scope"), ("id", "id"), ("reminder", "reminder")]
    empty_detail = "no anchors in this session"

    def rows_for(self, snap: Any) -> list[Any]:
        return view.anchor_rows(snap)

    def haystack(self, r: Any) -> Iterable[Any]:
        return (r.anchor_id, r.text, r.reminder, r.state)

    def detail_for(self, r: Any, snap: Any) -> Any:
        return view.anchor_detail(r)

    def selection_for(self, r: Any) -> Selection:
        kind = "archived" if r.state == "archived" else "anchor"
        return Selection(kind, r.key, text=r.text, anchor_id=r.anchor_id, session_id=r.session_id, obj=r.obj)


# ── Drift log ───────────────────────────────────────────────────────────────


class DriftPanel(TableDetailPanel):
    DEPENDS = ("session_id", "drift_log", "compactions", "audit")

    """Every audit (MemLock drift log), newest first; the selected one explained below."""

    NAME = SOURCE = "drift"
    COLUMNS = [("time", "time"), ("score", "score"), ("lost", "lost"), ("casualties", "casualties")]
    empty_detail = "no audits recorded for this session yet"

    def rows_for(self, snap: Any) -> list[Any]:
        return view.drift_rows(snap, self.now)

    def haystack(self, r: Any) -> Iterable[Any]:
        return (*r.casualties, r.when)

    def detail_for(self, r: Any, snap: Any) -> Any:
        return view.drift_detail(snap, r, self.now)

    def selection_for(self, r: Any) -> Selection:
        return Selection("event", r.key, obj=r.event)


# ── Capacity ────────────────────────────────────────────────────────────────


class CapacityPanel(TableDetailPanel):
    DEPENDS = ("memory", "findings", "prompt_blocks", "archived")

    """MEMORY.md / USER.md usage bars, the entries with sizes and threat flags, the next
    session's frozen prompt block."""

    NAME = SOURCE = "capacity"
    COLUMNS = [("target", "target"), ("n", "#"), ("id", "id"), ("chars", "chars"), ("flags", "flags"), ("entry", "entry")]
    empty_detail = None  # the prompt block is shown even without a selected entry

    def compose_header(self) -> ComposeResult:
        yield Readout(id="usage-memory", classes="usage", fits_width=True)
        yield Readout(id="usage-user", classes="usage", fits_width=True)

    def show_header(self, snap: Any) -> None:
        width = max(20, (self.size.width or 78) - 2)
        for target in ("memory", "user"):
            self.query_one(f"#usage-{target}", Readout).show(view.usage_bar(snap, target, width))

    def on_resize(self) -> None:
        """The bars are drawn to the width: redraw them when the terminal grows or shrinks."""
        if self._snap is not None:
            self.show_header(self._snap)

    def rows_for(self, snap: Any) -> list[Any]:
        return view.entry_rows(snap)

    def haystack(self, r: Any) -> Iterable[Any]:
        return (r.text, r.target)

    def detail_for(self, r: Any, snap: Any) -> Any:
        return view.capacity_detail(snap, r)

    def selection_for(self, r: Any) -> Selection:
        return Selection("entry", r.key, target=r.target, text=r.text, obj=r.entry)


# ── Recall ──────────────────────────────────────────────────────────────────


class RecallPanel(Panel):
    """A query box; results grouped by session; the next reminder block; the fence preview."""

    query_text: str = ""

    def compose(self) -> ComposeResult:
        yield from self.compose_banner()
        yield Input(placeholder="recall: type a query and press enter", id="recall-query")
        with VerticalScroll(id="recall-results-box"):
            yield Static(Text("type a query to preview what session recall would find", style="dim"), id="recall-results")
        with Horizontal(id="recall-previews"):
            with VerticalScroll(classes="preview"):
                yield Readout(id="recall-reminder")
            with VerticalScroll(classes="preview"):
                yield Readout(id="recall-fence")

    def primary(self) -> Any:
        # while the panel says "type a query", typing must land in the query box
        if not self.query_text.strip():
            return self.query_one("#recall-query", Input)
        return self.query_one("#recall-results-box")

    def open_filter(self) -> None:
        focus_now(self.query_one("#recall-query", Input))

    def clear_filter(self) -> None:
        focus_now(self.query_one("#recall-results-box"))  # escape leaves the query box

    def show_snapshot(self, snap: Any) -> None:
        self.show_banner(snap.error_for("recall"))
        self._snap = snap
        self.query_one("#recall-reminder", Readout).show(view.reminder_preview(snap, title="reminder block MemLock would inject next"))
        self._show_fence()

    def _show_fence(self) -> None:
        snap = getattr(self, "_snap", None)
        self.query_one("#recall-fence", Readout).show(view.fence_preview(snap, getattr(self, "_result", None), self.query_text))

    @on(Input.Submitted, "#recall-query")
    @guarded
    def _submitted(self, event: Input.Submitted) -> None:
        self.query_text = event.value
        self.query_one("#recall-results", Static).update(Text("searching…", style="dim"))
        self.post_message(RecallRequested(event.value))

    @guarded
    def show_recall(self, query: str, result: Any, error: str | None) -> None:
        if query != self.query_text:
            return
        self._result = result
        self.show_banner(error)
        self.query_one("#recall-results", Static).update(view.recall_results(result, query, self.now))
        self._show_fence()


# ── Review ──────────────────────────────────────────────────────────────────


class ReviewPanel(TableDetailPanel):
    DEPENDS = ("pending", "findings", "memory", "threat_differences", "hermes_profile")

    """Pending writes and flagged entries, each with its threat findings highlighted."""

    NAME = SOURCE = "review"
    COLUMNS = [("kind", "kind"), ("id", "id"), ("target", "target"), ("action", "action"), ("findings", "findings"), ("text", "text")]
    empty_detail = "nothing to review: no pending writes and no flagged entries"

    def rows_for(self, snap: Any) -> list[Any]:
        return view.review_rows(snap, self.now)

    def haystack(self, r: Any) -> Iterable[Any]:
        return (r.text, r.ident, r.kind)

    def detail_for(self, r: Any, snap: Any) -> Any:
        return view.review_detail(r)

    def selection_for(self, r: Any) -> Selection:
        if r.kind == "pending":
            return Selection("pending", r.key, target=r.target, text=r.text, pending_id=r.ident, obj=r.obj)
        return Selection("entry", r.key, target=r.target, text=r.text, obj=r.obj)


# ── History ─────────────────────────────────────────────────────────────────


class HistoryPanel(TableDetailPanel):
    """Every recorded change to memory and anchors, by any writer, newest first, with a diff."""

    NAME = SOURCE = "history"
    DEPENDS = ("history",)
    COLUMNS = [("id", "id"), ("when", "when"), ("who", "who"), ("where", "where"), ("op", "op"), ("text", "text")]
    empty_detail = None  # the detail says what the panel records

    def rows_for(self, snap: Any) -> list[Any]:
        return history_view.history_rows(snap)

    def haystack(self, r: Any) -> Iterable[Any]:
        return (r.text, history_view.who(r.change), r.change.op, r.change.target)

    def detail_for(self, r: Any, snap: Any) -> Any:
        return history_view.history_detail(snap, r)

    def selection_for(self, r: Any) -> Selection:
        return Selection("change", r.key, target=r.change.target, text=r.text, obj=r.change)
