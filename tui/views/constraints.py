"""What the Constraints screen shows (pure: no Textual): one compaction's ledger
(``core/constraints``, the shape of ``memdeck constraints --json``'s ``compactions[]``) as rows,
the title's counts per verdict, and the selected item's evidence."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from typing import Any

from rich.text import Text

from ..safe_text import safe_text

VERDICT_STYLE = {"kept": "green", "weakened": "bold yellow", "lost": "bold red", "promoted": "bold magenta",
                 "orphan": "cyan"}

#: the verdicts ``p`` repairs by pinning the user's own words as an anchor
REPAIRABLE = frozenset({"weakened", "lost"})


def repairable(item: Mapping[str, Any] | None) -> bool:
    """Whether ``p`` pins this item: a lost or weakened rule with the user's words."""
    return item is not None and item.get("verdict") in REPAIRABLE and bool(item.get("rule"))


def verdict_counts(comp: Mapping[str, Any]) -> dict[str, int]:
    """Items per verdict of one compaction, every verdict present (0 when none)."""
    from memdeck.core.constraints.classify import VERDICTS

    out = dict.fromkeys(VERDICTS, 0)
    for it in comp.get("items", ()):
        out[it["verdict"]] = out.get(it["verdict"], 0) + 1
    return out


def ledger_title(session_id: str, comp: Mapping[str, Any] | None, method: str) -> Text:
    """``Constraint ledger · compaction #N (mode, time) · 1 kept, 2 lost, ... · keyword``."""
    t = Text("Constraint ledger", style="bold")
    t.append(" · session ")
    t.append_text(safe_text(session_id, single_line=True, max_chars=40))
    if comp is None:
        return t
    at = _dt.datetime.fromtimestamp(float(comp["at"])).strftime("%Y-%m-%d %H:%M")
    t.append(f" · compaction #{comp['compaction_id']} ({str(comp['mode']).replace('_', '-')}, {at}) · ")
    counts = verdict_counts(comp)
    for n, (verdict, k) in enumerate(counts.items()):
        if n:
            t.append(", ")
        t.append(f"{k} {verdict}", style=VERDICT_STYLE[verdict] if k else "dim")
    t.append(f" · {method}", style="dim")
    return t


def item_row(item: Mapping[str, Any]) -> tuple[Text, Text, Text]:
    """(verdict, the rule or else the summary line, source turn) cells of one item."""
    words = item.get("rule") if item.get("rule") is not None else item.get("summary_line")
    turn = item.get("source_turn_id")
    return (Text(str(item["verdict"]), style=VERDICT_STYLE.get(str(item["verdict"]), "")),
            safe_text(str(words or ""), single_line=True, max_chars=90),
            Text("—" if turn is None else str(turn), justify="right", style="dim" if turn is None else ""))


_WHY = {
    "kept": "the summary (or an anchor, MEMORY/USER) says it with the same binding force",
    "weakened": "the summary says it without its binding force",
    "lost": "neither the summary, an anchor nor MEMORY/USER carries it",
    "promoted": "the summary states as standing a rule the user scoped to one operation",
    "orphan": "a binding line of the summary that no compacted user turn supports",
}


def item_detail(item: Mapping[str, Any] | None) -> Text:
    """The detail pane: the verdict and why, the user's words and source turn, the summary's
    line, the evidence that decided (words shared, similarity), and the repair key."""
    if item is None:
        return Text("no rule in the compacted turns and no constraint line in the summary", style="dim")
    verdict = str(item["verdict"])
    t = Text()
    t.append(verdict.upper(), style=VERDICT_STYLE.get(verdict, "bold"))
    t.append(f" · {_WHY.get(verdict, '')} · decided by {item.get('method', '?')}\n", style="dim")
    if item.get("rule") is not None:
        t.append("rule: ", style="bold")
        t.append_text(safe_text(str(item["rule"]), single_line=True, max_chars=300))
        turn = item.get("source_turn_id")
        t.append(f"\n   from user turn {turn}" if turn is not None else "", style="dim")
        if item.get("scope"):
            t.append(f" · scope: {item['scope']}", style="dim")
        t.append("\n")
    t.append("summary: ", style="bold")
    if item.get("summary_line") is not None:
        t.append_text(safe_text(str(item["summary_line"]), single_line=True, max_chars=300))
    else:
        t.append("(no line)", style="dim")
    t.append("\nevidence: ", style="bold")
    ev = item.get("evidence") or {}
    t.append_text(safe_text(", ".join(f"{k}={v}" for k, v in ev.items()) or "—", single_line=True, max_chars=400))
    if repairable(item):
        t.append("\np pins the user's words as an anchor (the what-if replay shows before it is written)", style="yellow")
    return t


def ledger_line(snap: Any) -> Text | None:
    """The Drift panel's line of the shown session's constraint ledger: ``constraint ledger · 4
    compactions · 2 lost · 1 weakened · 1 promoted · 6 kept · L opens it`` (None: no compaction).
    The counts are over the compactions computed so far (``… more being read`` while the ledger
    worker fills the rest)."""
    c = getattr(snap, "constraints", None)
    if not c or not c.get("compactions"):
        return None
    n = int(c["compactions"])
    t = Text("constraint ledger", style="bold")
    t.append(f" · {n} compaction{'s' if n != 1 else ''}")
    counts = c.get("counts") or {}
    for verdict in ("lost", "weakened", "promoted", "orphan", "kept"):
        k = int(counts.get(verdict, 0))
        if k:
            t.append(" · ")
            t.append(f"{k} {verdict}", VERDICT_STYLE[verdict])
    if not any(int(counts.get(v, 0)) for v in counts):
        t.append(" · no rule in the compacted turns", "dim")
    if c.get("pending"):
        t.append(f" · {c['pending']} more being read…", "dim")
    t.append(" · L opens it", "dim")
    return t


def changed_count(snap: Any) -> int:
    """Rules the shown session's compactions lost, weakened or promoted (the Drift tab's count)."""
    c = getattr(snap, "constraints", None)
    if not c:
        return 0
    counts = c.get("counts") or {}
    return sum(int(counts.get(v, 0)) for v in ("lost", "weakened", "promoted"))


def newest_toast(prev: Any, snap: Any) -> tuple[str, str] | None:
    """``(title, message)`` when the live session's newest compaction is new since ``prev`` and
    lost, weakened or promoted rules (None otherwise: the same compaction, another session, a
    session the user picked, or a compaction that changed no rule)."""
    if prev is None or snap is None or not getattr(snap, "following_live", False):
        return None
    new, old = getattr(snap, "constraints", None), getattr(prev, "constraints", None)
    newest = new.get("newest") if new else None
    if not newest or not old or old.get("session_id") != new.get("session_id"):
        return None
    before = old.get("newest")
    if before is not None and int(before.get("compaction_id", 0)) >= int(newest["compaction_id"]):
        return None
    changed = newest.get("changed") or ()
    if not changed:
        return None
    by: dict[str, int] = {}
    for it in changed:
        by[it["verdict"]] = by.get(it["verdict"], 0) + 1
    words = ", ".join(f"{n} {v}" for v, n in by.items())
    first = next((it for it in changed if it.get("rule")), None)
    example = f": \"{first['rule']}\" {first['verdict']}" if first is not None else ""
    return (f"compaction #{newest['compaction_id']} changed rules",
            f"session {new.get('session_id')}: {words}{example}. Drift → L opens the ledger")
