"""The History panel: every recorded change to memory and anchors, by any writer, newest
first, in words (a word diff of an entry, an anchor field by field); its relative times are
drawn again once a minute while it is shown."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ...views import history
from ...views.history import HistoryRow
from .base import Selection, TableDetailPanel

if TYPE_CHECKING:
    from memdeck.core.overview.snapshot import DeckSnapshot


class HistoryPanel(TableDetailPanel):
    """Every recorded change to memory and anchors, by any writer, newest first, with a diff."""

    NAME = SOURCE = "history"
    DEPENDS = ("history",)
    COLUMNS = [("id", "id"), ("when", "when"), ("who", "who"), ("where", "where"), ("op", "op"), ("text", "text")]
    empty_detail = None  # the detail says what the panel records
    RELATIVE_TIMES = True  # "12 min ago" in the when column and the detail

    def rows_for(self, snap: DeckSnapshot) -> list[HistoryRow]:
        return history.history_rows(snap, self.now)

    def haystack(self, r: HistoryRow) -> Iterable[Any]:
        c = r.change
        # who in full (a Hermes session id, a pending write's id), but not the words that explain
        # "external" ("not memdeck, ..."): a filter "memdeck" finds memdeck's changes only
        who = history.who_short(c) if c.actor in ("external", "") else history.who(c)
        return (r.text, who, history.who_short(c), history.op_words(c), history.where_short(c), c.where)

    def detail_for(self, r: HistoryRow | None, snap: DeckSnapshot) -> Any:
        return history.history_detail(snap, r, self.now)

    def selection_for(self, r: HistoryRow) -> Selection:
        return Selection("change", r.key, target=r.change.target, text=r.text, obj=r.change)
