"""The Anchors panel: one row per anchor of the shown session, sorted as MemLock re-injects
them (priority desc, id asc), then the archived ones; the detail of the row under the cursor."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ...views import anchors
from ...views.anchors import AnchorRow
from .base import Selection, TableDetailPanel

if TYPE_CHECKING:
    from memdeck.core.overview.snapshot import DeckSnapshot


class AnchorsPanel(TableDetailPanel):
    """One row per anchor, sorted as MemLock re-injects them (priority desc, id asc)."""

    DEPENDS = ("session_id", "audit", "session_anchors", "global_ids", "archived")

    NAME = SOURCE = "anchors"
    COLUMNS = [("state", "state"), ("pri", "pri"), ("probes", "probes"), ("scope", "scope"), ("id", "id"), ("reminder", "reminder")]
    empty_detail = "no anchors in this session"

    def rows_for(self, snap: DeckSnapshot) -> list[AnchorRow]:
        return anchors.anchor_rows(snap)

    def haystack(self, r: AnchorRow) -> Iterable[Any]:
        return (r.anchor_id, r.text, r.reminder, r.state)

    def detail_for(self, r: AnchorRow, snap: DeckSnapshot) -> Any:
        return anchors.anchor_detail(r)

    def selection_for(self, r: AnchorRow) -> Selection:
        kind = "archived" if r.state == "archived" else "anchor"
        return Selection(kind, r.key, text=r.text, anchor_id=r.anchor_id, session_id=r.session_id, obj=r.obj)

