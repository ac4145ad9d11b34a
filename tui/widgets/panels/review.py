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

    DEPENDS = ("pending", "findings", "memory", "threat_differences", "hermes_profile", "review", "provider")
    RELATIVE_TIMES = True  # each record's age

    NAME = SOURCE = "review"
    COLUMNS = [("kind", "kind"), ("id", "id"), ("target", "target"), ("action", "action"), ("state", "state"),
               ("age", "age"), ("findings", "findings"), ("text", "text")]
    empty_detail = "nothing to review: no pending writes and no flagged entries"

    def _age_limit(self) -> float:
        settings = getattr(self.app, "alert_settings", None)
        return float(getattr(settings, "pending_age_s", 24 * 3600.0))

    def rows_for(self, snap: DeckSnapshot) -> list[ReviewRow]:
        return review.review_rows(snap, self.now, self._age_limit())

    def haystack(self, r: ReviewRow) -> Iterable[Any]:
        return (r.text, r.ident, r.kind)

    def detail_for(self, r: ReviewRow, snap: DeckSnapshot) -> Any:
        return review.review_detail(r, snap, self.now)

    def selection_for(self, r: ReviewRow) -> Selection:
        if r.kind == "pending":
            return Selection("pending", r.key, target=r.target, text=r.text, pending_id=r.ident, obj=r.obj)
        return Selection("entry", r.key, target=r.target, text=r.text, obj=r.obj)

