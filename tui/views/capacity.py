"""The Capacity panel's text: MEMORY.md / USER.md usage bars, one row per entry (size, threat
flags), and the next session's frozen prompt block.

Pure functions of a :class:`memdeck.core.overview.snapshot.DeckSnapshot`; the usage numbers
are the core's (:class:`memdeck.core.memory.reader.MemoryFileState`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.console import RenderableType
from rich.text import Text

from memdeck.core.home import TARGET_FILES, TARGETS
from memdeck.core.memory.entries import entry_id
from memdeck.core.memory.reader import LISTED_ENTRIES

from ..safe_text import safe_text
from .common import findings_for, findings_legend, flag_text, highlighted, titled_block

if TYPE_CHECKING:
    from memdeck.core.memory.entries import Entry
    from memdeck.core.memory.threats import Finding
    from memdeck.core.overview.snapshot import DeckSnapshot

#: The most entries of one file listed in Capacity: the core's listing bound, shared with plain
#: ``memdeck status`` (a file far over its limit can hold 200,000; a table of that many rows
#: would hold the UI thread for a minute). The bar says how many more.
MAX_ENTRY_ROWS = LISTED_ENTRIES


def usage_of(snap: DeckSnapshot, target: str) -> tuple[int, int]:
    """``(chars used, char limit)`` of ``target`` from the core's memory state (without one:
    0 used of the config's char limit)."""
    state = snap.memory.get(target)
    if state is None:
        return 0, int(snap.config.char_limit(target))
    return int(state.chars), int(state.limit)


def usage_bar(snap: DeckSnapshot, target: str, width: int) -> Text:
    """``MEMORY.md  88%  1,952/2,200 chars · 21 entries  ████░░`` fitted to ``width`` columns
    (the numbers first: the bar shrinks, never the numbers), then a line for a file far over
    its limit and one for a file that does not round-trip."""
    name = TARGET_FILES.get(target, "USER.md").ljust(9)
    state = snap.memory.get(target)
    t = Text()
    t.append(f"{name} ", "bold")
    if state is None:
        t.append("unavailable", "red")
        return t
    used, limit = usage_of(snap, target)
    pct = 0 if limit <= 0 else used * 100 / limit
    n = len(state.entries)
    # Hermes' own rounding of the percentage (the prompt block header shows it)
    label = f"{f'{state.pct}%':>4}  {used:,}/{limit:,} chars · {n} entries"
    bar_w = max(0, width - len(name) - 1 - len(label) - 2)
    filled = min(bar_w, round(bar_w * min(pct, 100) / 100))
    style = "red" if pct >= 90 else ("yellow" if pct >= 75 else "green")
    t.append(label, "bold red" if pct > 100 else "")
    if bar_w >= 4:
        t.append("  ")
        t.append("█" * filled, style)
        t.append("░" * (bar_w - filled), "dim")
    if n > MAX_ENTRY_ROWS or state.unscanned:
        t.append("\n  ⚠ ", "bold red")
        far = f"{used // max(1, limit):,}x its limit" if limit and used > limit else "very large"
        t.append(f"far over its char limit ({far}): ", "bold red")
        t.append(f"the first {min(n, MAX_ENTRY_ROWS):,} of {n:,} entries are listed", "red")
        if state.unscanned:
            t.append(f", {state.unscanned:,} not threat-scanned", "red")
    off = snap.provider.off_reason(target) if getattr(snap, "provider", None) is not None else None
    if off:  # switched off in config.yaml: empty on purpose (issue 25)
        t.append("\n  ⊘ ", "bold cyan")
        t.append_text(safe_text(off, single_line=True, style="cyan"))
    if state.drift:
        t.append("\n  ⚠ ", "bold yellow")
        t.append_text(safe_text(f"does not round-trip: {state.drift} (Hermes refuses replace/remove until it is normalized)",
                                single_line=True, style="yellow"))
    return t


@dataclass
class EntryRow:
    """One memory entry as a table row (``key`` = ``<target>:<entry id>``; ``index`` 1-based)."""

    key: str
    target: str
    index: int
    text: str
    chars: int
    findings: tuple[Finding, ...]
    entry: Entry
    cells: tuple[Text, ...] = ()


def entry_rows(snap: DeckSnapshot) -> list[EntryRow]:
    """The entries of MEMORY.md then USER.md (at most :data:`MAX_ENTRY_ROWS` of each), with
    their size, the id the CLI takes and their threat flags."""
    rows = []
    for target in TARGETS:
        state = snap.memory.get(target)
        for i, e in enumerate((state.entries if state is not None else ())[:MAX_ENTRY_ROWS], 1):
            text = e.text
            key = f"{target}:{e.id or i}"
            fnd = findings_for(snap, text)
            flags = flag_text(f.pattern_id for f in fnd) if e.scanned else Text("not scanned", style="dim")
            cells = (
                Text("MEMORY" if target == "memory" else "USER", style="bold"),
                Text(str(i), justify="right"),
                Text(e.id or entry_id(text), style="dim"),  # the id the CLI takes
                Text(f"{len(text):,}", justify="right"),
                flags,
                safe_text(text, single_line=True, max_chars=300),
            )
            rows.append(EntryRow(key, target, i, text, len(text), fnd, e, cells))
    return rows


def capacity_detail(snap: DeckSnapshot, r: EntryRow | None) -> RenderableType:
    """The entry under the cursor (its threat findings highlighted, then listed), over the
    next session's frozen prompt block (shown without a selected entry too)."""
    parts: list[Text] = []
    if r is not None:
        head = Text()
        head.append(f"{TARGET_FILES[r.target]} entry {r.index} · {r.chars:,} chars", "bold")
        parts.append(head)
        body = highlighted(r.text, r.findings)
        body.append_text(findings_legend(r.findings))
        parts.append(body)
        parts.append(Text(""))
    note = None
    if "[BLOCKED:" in snap.prompt_blocks:
        note = ("flagged entries go in as [BLOCKED: …] placeholders, and the header's usage counts them: "
                "it can differ from the bars above")
    parts.append(titled_block("next session's frozen prompt block", snap.prompt_blocks, "(empty: nothing will be injected)", note))
    return Text("\n").join(parts)
