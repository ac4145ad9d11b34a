"""The Review panel: pending writes and flagged entries, each with its threat findings highlighted."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ...views import review
from ...views.review import ReviewRow
from .base import Selection, TableDetailPanel

if TYPE_CHECKING:
    from memdeck.core.overview.snapshot import DeckSnapshot


class ReviewPanel(TableDetailPanel):
    """Pending writes and flagged entries, each with its threat findings highlighted."""

    DEPENDS = ("pending", "findings", "memory", "threat_differences", "hermes_profile")

    NAME = SOURCE = "review"
    COLUMNS = [("kind", "kind"), ("id", "id"), ("target", "target"), ("action", "action"), ("findings", "findings"), ("text", "text")]
    empty_detail = "nothing to review: no pending writes and no flagged entries"

    def rows_for(self, snap: DeckSnapshot) -> list[ReviewRow]:
        return review.review_rows(snap, self.now)

    def haystack(self, r: ReviewRow) -> Iterable[Any]:
        return (r.text, r.ident, r.kind)

    def detail_for(self, r: ReviewRow, snap: DeckSnapshot) -> Any:
        return review.review_detail(r)

    def selection_for(self, r: ReviewRow) -> Selection:
        if r.kind == "pending":
            return Selection("pending", r.key, target=r.target, text=r.text, pending_id=r.ident, obj=r.obj)
        return Selection("entry", r.key, target=r.target, text=r.text, obj=r.obj)

