"""The summary's constraint lines: the ``## Constraints & Preferences`` section of each Hermes
layout (0.19's template and 0.22's, which asks for security and safety constraints quoted
verbatim, ``agent/context_compressor.py``), the legacy ``[CONTEXT SUMMARY]:`` form, and any
binding line elsewhere in the summary."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .markers import found, imperative_start
from .rules import sentences

_SECTION = re.compile(r"^\s{0,3}#{1,4}\s*(.+?)\s*#*\s*$")
_QUOTE = re.compile(r"^\s*(?:>\s?)+")  # 0.22's "## User Messages (verbatim, newest first)" quotes
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
#: section titles that hold constraints (case-folded, prefix match)
CONSTRAINT_SECTIONS = ("constraints", "constraints & preferences", "constraints and preferences", "preferences",
                       "rules", "user preferences", "standing instructions")


@dataclass(frozen=True)
class SummaryLine:
    """One line of a summary: its ``text`` (bullet marker stripped), the ``section`` title it sits
    under (None before any), and whether it reads ``binding`` (a binding marker or an imperative
    first word)."""

    text: str
    section: str | None
    binding: bool

    @property
    def in_constraints(self) -> bool:
        return self.section is not None and self.section.casefold().startswith(CONSTRAINT_SECTIONS)


def summary_lines(summary: str) -> list[SummaryLine]:
    """Every non-empty line of ``summary`` after its prefix (the text before the first line
    break of a ``[CONTEXT COMPACTION`` / ``[CONTEXT SUMMARY]:`` header is the prefix)."""
    body = summary or ""
    for prefix in ("[CONTEXT SUMMARY]:",):
        if body.startswith(prefix):
            body = body[len(prefix):]
    if body.startswith("[CONTEXT COMPACTION"):
        body = body.split("\n", 1)[1] if "\n" in body else ""
    body = body.split("--- END OF CONTEXT SUMMARY")[0]
    out: list[SummaryLine] = []
    section: str | None = None
    for raw in body.splitlines():
        m = _SECTION.match(raw)
        if m:
            section = m.group(1)
            continue
        text = _BULLET.sub("", _QUOTE.sub("", raw)).strip()
        if not text or (text.startswith("[") and text.endswith("]")):
            continue
        # prose outside any section (the legacy ``[CONTEXT SUMMARY]:`` paragraph) is one line per
        # sentence: one sentence's "never" does not bind the next
        for part in (sentences(text) if section is None else [text]) or [text]:
            binding = bool(found("binding", part)) or imperative_start(part)
            out.append(SummaryLine(part, section, binding))
    return out


def constraint_lines(summary: str) -> list[SummaryLine]:
    """The lines that carry constraints: every line of a constraints section, and binding lines
    elsewhere."""
    return [ln for ln in summary_lines(summary) if ln.in_constraints or ln.binding]
