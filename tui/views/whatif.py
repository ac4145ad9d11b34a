"""The pin dialog's what-if: how the anchor being typed would have fared at each past
compaction of the session (:class:`memdeck.core.anchors.whatif.WhatIf`), as Rich text.

Pure functions (no Textual).
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from ..safe_text import safe_text
from .common import clock

#: Compactions listed one per line (the newest; the count says how many there are).
SHOWN = 6


def whatif_text(wi: Any) -> Text:
    """``what if …: alive at N of M compactions (method)``, the newest compactions one per line
    (verdict, similarity or hits, the score, whether its reminder would have been re-injected),
    then the suggested probes; the degradation of a semantic detection that cannot run."""
    t = Text()
    det = getattr(wi, "detection", None)
    if not wi.compactions:
        t.append("what if: no compaction in state.db to replay yet", "dim")
        return t
    n = len(wi.points)
    t.append("what if: ", "bold")
    t.append(f"alive at {wi.alive_count} of {n} compaction{'s' if n != 1 else ''}",
             "green" if n and wi.alive_count == n else "bold yellow" if wi.alive_count else "bold red")
    t.append(f" ({wi.method})", "dim")
    if getattr(wi, "carried_by", None):
        t.append(f" · alive because {wi.carried_by} carries it", "bold cyan")
        t.append(" (the system prompt holds its words; MemLock audits the prompt too)", "dim")
    if wi.pending:
        t.append(f" · {wi.pending} older not replayed yet", "dim")
    if wi.replaces:
        t.append(" · already pinned as ", "dim")
        t.append_text(safe_text(wi.replaces, single_line=True, max_chars=24))
    if det is not None and det.degraded:
        t.append("\n  ! ", "bold yellow")
        t.append_text(safe_text(f"{det.configured} configured, {det.active} in use: {det.reason}", single_line=True,
                                max_chars=160, style="yellow"))
    for p in list(wi.points)[-SHOWN:]:
        v = p.verdict
        t.append(f"\n  #{p.compaction_id:<3} {clock(p.at)}  ", "dim")
        t.append("alive  " if v.alive else "drifted", "green" if v.alive else "red")
        if v.similarity is not None:
            t.append(f"  sim {v.similarity:.3f}")
        elif v.probes:
            t.append(f"  hits {v.hits}/{len(v.probes)}")
        t.append(f"  score {'n/a' if p.score is None else str(p.score) + '%'}", "dim")
        if not v.alive:
            t.append("  re-injected" if p.in_reminder_block else "  left out of the reminder block",
                     "cyan" if p.in_reminder_block else "yellow")
    t.append("\nsuggested probes ", "dim")
    if wi.suggested_probes:
        t.append_text(safe_text(", ".join(f"{w} ({k}/{n})" for w, k in wi.suggested_probes), single_line=True))
        t.append("  (words of the text that survive in the summaries)", "dim")
    else:
        t.append("none: no word of the text survives in a compacted summary", "dim")
    return t
