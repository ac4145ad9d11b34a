"""What the Hygiene screen shows (pure: no Textual): a finding's row, its evidence and the next
session's block diff its proposal would make (``core/hygiene``)."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from ..safe_text import safe_text

KIND_STYLE = {"duplicate": "bold cyan", "contradiction": "bold yellow", "stale": "magenta", "wasteful": "blue"}


def finding_row(f: Any) -> tuple[Text, Text, Text, Text]:
    """(kind, chars saved, entries, id) cells of one finding."""
    first = f.entries[0]
    more = f" (+{len(f.entries) - 1})" if len(f.entries) > 1 else ""
    return (Text(f.kind, style=KIND_STYLE.get(f.kind, "")), Text(f"{f.chars_saved:,}", justify="right"),
            safe_text(f"[{first.target}] {first.text}", single_line=True, max_chars=70) + Text(more, style="dim"),
            Text(f.id, style="dim"))


def _who(e: Any) -> str:
    if e.written_at is None and e.actor is None:
        return "who wrote it and when: unknown (no change history)"
    import datetime as _dt

    when = _dt.datetime.fromtimestamp(e.written_at).strftime("%Y-%m-%d %H:%M") if e.written_at else "?"
    sess = f", session {e.session_id}" if e.session_id else ""
    return f"written by {e.actor or '?'} at {when}{sess}"


def block_diff(f: Any, merged: str | None = None) -> list[tuple[str, str, str]]:
    """``[(sign, target, text)]``: how the next session's frozen block changes if the proposal
    is applied (``-`` leaves, ``+`` arrives); a contradiction's shows both choices' removals."""
    p = f.proposal
    out: list[tuple[str, str, str]] = []
    if p.action == "merge" and p.keep is not None:
        text = merged if merged is not None else (p.text or p.keep.text)
        for e in p.entries:
            out.append(("-", e.target, e.text))
        out.append(("+", p.keep.target, text))
    elif p.action == "archive":
        out.extend(("-", e.target, e.text) for e in p.entries)
    return out


def finding_detail(f: Any, method: str, merged: str | None = None) -> Text:
    """The detail pane: each entry with who wrote it, the evidence, the proposal and its block diff."""
    t = Text()
    t.append(f"{f.kind} · saves {f.chars_saved:,} chars per turn · {method}\n", style=KIND_STYLE.get(f.kind, "bold"))
    for n, e in enumerate(f.entries, 1):
        t.append(f"{n}. [{e.target}] ", style="bold")
        t.append_text(safe_text(e.text, single_line=True))
        t.append(f"\n   {_who(e)}\n", style="dim")
    ev = {k: v for k, v in f.evidence.items() if k not in ("pairs", "carried_by", "method", "note")}
    for pair in f.evidence.get("pairs", ())[:2]:
        ev.setdefault("pairs", []).append({k: pair.get(k) for k in ("similarity", "shared", "decided_by")})
    t.append("evidence: ", style="bold")
    t.append_text(safe_text(", ".join(f"{k}={v}" for k, v in ev.items()), single_line=True, max_chars=400))
    t.append("\n")
    if f.kind == "contradiction":
        t.append("the newer is not assumed right: 1 keeps entry 1, 2 keeps entry 2 (the other is archived)\n",
                 style="yellow")
        return t
    t.append("next session's block if applied (enter; e edits a merge first):\n", style="bold")
    for sign, target, text in block_diff(f, merged):
        t.append(f" {sign} [{target}] ", style="red" if sign == "-" else "green")
        t.append_text(safe_text(text, single_line=True, max_chars=110))
        t.append("\n")
    return t
