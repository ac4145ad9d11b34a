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
