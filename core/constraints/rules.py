"""The user's rules in a compaction's compacted turns: sentences that bind later behaviour
(:mod:`.markers`: always, never, do not, must, from now on, prefer, an imperative verb first, and
their equivalents in German, Spanish, French, Chinese and Japanese), each with its turn id and
any scope it carries (``once``: this time, this file, for now; ``until``: until X)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .markers import found, imperative_start

_SENTENCE = re.compile(r"[^.!?;。！？；\n]+[.!?;。！？；]?")


@dataclass(frozen=True)
class Rule:
    """One rule: the user's own ``text``, the ``turn_id`` (state.db message id) it came from,
    its ``scope`` (``once`` | ``until`` | None: standing) and the ``markers`` that made it one."""

    text: str
    turn_id: int | None
    scope: str | None
    markers: tuple[str, ...]


def sentences(text: str) -> list[str]:
    """``text`` cut into sentences (Latin and CJK punctuation, line breaks), stripped, non-empty."""
    return [s.strip(" \t-*•") for s in _SENTENCE.findall(text or "") if s.strip(" \t-*•.!?;。！？；")]


def scope_of(text: str) -> str | None:
    if found("once", text):
        return "once"
    if found("until", text):
        return "until"
    return None


def rules_in(text: str, turn_id: int | None = None) -> list[Rule]:
    """The rules of one user turn's ``text``, in order."""
    out = []
    for s in sentences(text):
        if s.rstrip().endswith(("?", "？")):
            continue  # a question binds nothing ("Where should we start?")
        marks = found("binding", s)
        if not marks and imperative_start(s):
            marks = ["(imperative)"]
        if not marks and found("once", s):
            marks = ["(scoped instruction)"]  # "this time, X" / "这次先 X": a scope marks an instruction
        if marks and len(s) >= 4:
            out.append(Rule(s, turn_id, scope_of(s), tuple(marks)))
    return out
