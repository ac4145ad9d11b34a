"""The Recall panel's preview: the hits of a recall query and the ``<memory-context>`` fence they make.

One concept: a query typed in the Recall panel runs Hermes' ``session_search`` equivalent
(:mod:`memdeck.core.sessions.recall`) on a read-only state.db and becomes a
:class:`RecallPreview`: the hits, one per session lineage, and the fence
(:func:`memdeck.core.memory.context_fence.memory_context_fence`) Hermes would put around them on
the user message. :func:`run_recall` answers at once with Hermes' ranking; :func:`stream_recall`
first yields newest-first pages for a dashboard, then that ranking. Neither raises: a failure is
a banner text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .banners import describe_failure

if TYPE_CHECKING:
    from ..config import Config
    from ..home import HermesHome
    from ..sessions.recall import RecallHit
    from ..sessions.statedb import StateDB


@dataclass(frozen=True)
class RecallPreview:
    """What the Recall panel shows for one query.

    Attributes:
        query: the query text.
        hits: :class:`memdeck.core.sessions.recall.RecallHit` values, one per session lineage,
            best first.
        fence: the ``<memory-context>`` block those hits would make (``""`` when none), built
            with :func:`memdeck.core.memory.context_fence.memory_context_fence` from one
            ``- <title>: <snippet>`` line per hit.
        excluded_session_id: the session whose lineage was left out, as Hermes'
            ``session_search`` leaves out the session it is called from (the live one).
        partial: True for a newest-first page of :func:`stream_recall` shown while Hermes'
            ranking is still being computed; False for the final, Hermes-ranked result.
    """

    query: str
    hits: tuple[RecallHit, ...] = ()
    fence: str = ""
    excluded_session_id: str | None = None
    partial: bool = False


def _unmark(snippet: str) -> str:
    return snippet.replace(">>>", "").replace("<<<", "")


def run_recall(db: StateDB | None, query: str, home: HermesHome | None, config: Config | None, *, limit: int = 10,
               current_session_id: str | None = None) -> tuple[RecallPreview | None, str | None]:
    """Run a recall query for the Recall panel: ``(preview, error banner or None)``. Never raises.

    Uses :func:`memdeck.core.sessions.recall.recall` (Hermes ``session_search`` discover mode,
    ``limit`` 1-10 lineages). ``current_session_id`` (the live session) and its lineage are
    left out, as Hermes leaves out the session that calls ``session_search``
    (tools/session_search_tool.py:499-616). A blank query gives ``(None, None)``; no database
    (``db`` None) gives ``(None, banner)``. ``home`` and ``config`` are not read.
    """
    if not query.strip():
        return None, None
    if db is None:
        return None, "no state.db in this home: nothing to recall"
    try:
        from ..sessions.recall import recall

        hits = tuple(recall(db, query, limit=limit, current_session_id=current_session_id))
        return _preview(query, hits, current_session_id, False), None
    except Exception as exc:  # noqa: BLE001 - recall's failure becomes the panel's one-line error
        return None, f"recall: {describe_failure(exc)}"


def _preview(query: str, hits: tuple[RecallHit, ...], current_session_id: str | None, partial: bool) -> RecallPreview:
    from ..memory.context_fence import memory_context_fence

    lines = [f"- {h.title or h.session_id}: {_unmark(h.snippet)}" for h in hits]
    fence = memory_context_fence("\n".join(lines)) if lines else ""
    return RecallPreview(query, hits, fence, current_session_id, partial)


def stream_recall(db: StateDB | None, query: str, *, limit: int = 10, current_session_id: str | None = None,
                  page_size: int = 3,
                  cancelled: Callable[[], bool] | None = None) -> Iterator[tuple[RecallPreview | None, str | None]]:
    """The Recall panel's query, in stages: ``(preview, error banner or None)`` values. Never raises.

    First one ``partial`` preview per page of :func:`memdeck.core.sessions.recall.iter_recall`
    (newest first; each preview holds every hit so far), then the final preview of
    :func:`run_recall` (Hermes' ``session_search`` ranking), which replaces them.
    ``cancelled()`` (True once a newer query superseded this one) is checked between stages;
    once it holds nothing more is yielded. A blank query or no database yields
    :func:`run_recall`'s answer alone.
    """
    if not query.strip() or db is None:
        yield run_recall(db, query, None, None, limit=limit, current_session_id=current_session_id)
        return
    stop = cancelled if callable(cancelled) else (lambda: False)
    try:
        from ..sessions.recall import iter_recall

        shown: tuple[RecallHit, ...] = ()
        for page in iter_recall(db, query, limit, page_size=page_size, current_session_id=current_session_id, cancelled=stop):
            if stop():
                return
            shown += tuple(page)
            yield _preview(query, shown, current_session_id, True), None
    except Exception as exc:  # noqa: BLE001 - recall's failure becomes the panel's one-line error
        yield None, f"recall: {describe_failure(exc)}"
        return
    if stop():
        return
    final = run_recall(db, query, None, None, limit=limit, current_session_id=current_session_id)
    if stop():
        return
    yield final


__all__ = ["RecallPreview", "run_recall", "stream_recall"]
