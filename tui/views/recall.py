"""The Recall panel's text: recall hits grouped by session lineage, and the
``<memory-context>`` fence they would make.

Pure functions of a :class:`memdeck.core.overview.recall_preview.RecallPreview` (None before a query
ran or when it failed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import RenderableType
from rich.text import Text

from ..safe_text import safe_text
from .common import clock, titled_block

if TYPE_CHECKING:
    from memdeck.core.overview.recall_preview import RecallPreview
    from memdeck.core.sessions.recall import RecallHit


#: What the demo suggests typing in Recall: words its past sessions answer (core/demo/story.py).
DEMO_QUERIES = ("deploy", "redis", "postgres")


def empty_recall(demo: bool = False) -> Text:
    """What Recall says before a query; in the demo, which words its past sessions answer."""
    t = Text("type a query to preview what session recall would find", style="dim")
    if demo:
        t.append(" (in the demo, try ", style="dim")
        for i, q in enumerate(DEMO_QUERIES):
            t.append(("" if i == 0 else ", " if i < len(DEMO_QUERIES) - 1 else " or ") + q, style="bold")
        t.append(")", style="dim")
    return t


def recall_results(result: RecallPreview | None, query: str, now: float, *, demo: bool = False) -> RenderableType:
    """Recall hits (:class:`core.sessions.recall.RecallHit`) grouped by session lineage, each
    with the message before and after the match; the match highlighted. ``demo``: a blank query
    suggests the demo's words."""
    hits = result.hits if result is not None else ()
    if not query.strip():
        return empty_recall(demo)
    excluded = result.excluded_session_id if result is not None else None
    note = Text()
    if result is not None and result.partial:
        note.append("newest first so far; ranking them as Hermes' session_search would…\n", "dim italic")
    if excluded:
        note.append("the live session ", "dim")
        note.append_text(safe_text(excluded, single_line=True, max_chars=40, style="dim"))
        note.append(" is left out, as Hermes' session_search leaves out the session it runs in\n", "dim")
    if not hits:
        return note + Text("no matches", style="dim")
    groups: dict[str, list[RecallHit]] = {}
    for h in hits:
        groups.setdefault(h.lineage_root, []).append(h)
    t = note.copy()
    for gi, (root, items) in enumerate(groups.items()):
        if gi:
            t.append("\n")
        first = items[0]
        t.append("▌ ", "bold cyan")
        t.append_text(safe_text(first.title or root, single_line=True, max_chars=70, style="bold"))
        t.append("  ")
        t.append_text(safe_text(root, single_line=True, style="dim"))
        meta = " · ".join(x for x in (first.source or "", clock(first.started_at) if first.started_at else "") if x)
        if meta:
            t.append(f"  {meta}", "dim")
        t.append("\n")
        for h in items:
            if h.session_id != root:
                t.append("  in ", "dim")
                t.append_text(safe_text(h.session_id, single_line=True, style="dim"))
                t.append("\n")
            shown_match = False
            for c in h.context:
                role, content = str(c.get("role", "")), str(c.get("content", ""))
                is_match = not shown_match and role == h.matched_role and _unmark(h.snippet).strip()[:20] in content
                if is_match:
                    shown_match = True
                    t.append(f"  ▸ {role}: ", "bold")
                    t.append_text(snippet_text(h, query))
                else:
                    t.append(f"    {role}: ", "dim")
                    if content.strip():
                        t.append_text(safe_text(content, single_line=True, max_chars=160, style="dim"))
                    else:
                        t.append("(no text: a tool call)", "dim italic")
                t.append("\n")
            if not shown_match:
                t.append(f"  ▸ {h.matched_role}: ", "bold")
                t.append_text(snippet_text(h, query))
                t.append("\n")
            if h.compacted:
                t.append("    (this message was compacted away from the live context)\n", "yellow")
    return t


def _unmark(s: str) -> str:
    return str(s).replace(">>>", "").replace("<<<", "")


def snippet_text(hit: RecallHit, query: str) -> Text:
    """A recall snippet, literal, with the FTS5 match (between ``>>>`` and ``<<<``) highlighted;
    without markers, every case-insensitive occurrence of each query word."""
    raw = str(hit.snippet)
    hl: list[tuple[int, int, str]] = []
    style = "bold reverse yellow"
    if ">>>" in raw and "<<<" in raw:
        out, i = [], 0
        pos = 0
        while i < len(raw):
            if raw.startswith(">>>", i):
                j = raw.find("<<<", i + 3)
                if j < 0:
                    out.append(raw[i:])
                    break
                seg = raw[i + 3 : j]
                hl.append((pos, pos + len(seg), style))
                out.append(seg)
                pos += len(seg)
                i = j + 3
            else:
                out.append(raw[i])
                pos += 1
                i += 1
        snippet = "".join(out)
    else:
        snippet = raw
        low = snippet.lower()
        for word in {w for w in query.lower().split() if len(w) >= 2}:
            start = 0
            while (k := low.find(word, start)) >= 0:
                hl.append((k, k + len(word), style))
                start = k + len(word)
    return safe_text(snippet, single_line=True, max_chars=240, highlights=hl)


def fence_preview(result: RecallPreview | None) -> Text:
    """The ``<memory-context>`` block the last query's hits would make
    (:attr:`RecallPreview.fence`), titled; a dim hint before a query found anything."""
    return titled_block("<memory-context> preview (appended to the user message)",
                        result.fence if result is not None else "",
                        "run a query to preview the fenced block")
