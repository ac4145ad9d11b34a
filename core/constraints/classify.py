"""The verdict on each rule and constraint line of one compaction, with its evidence.

* **kept**: a summary line says the rule with the same binding force (a binding word, or a line
  of the constraints section told as an instruction, and the same polarity), or an anchor or a
  MEMORY/USER entry carries it;
* **weakened**: a summary line says the rule without its binding force: the binding word lost,
  the prohibition gone ("never X" became "X"), or told as narrative ("X was discussed");
* **lost**: a standing rule neither the summary, an anchor nor MEMORY/USER carries (a rule for
  one operation that the summary drops was rightly dropped: no item);
* **promoted**: a summary line states as standing a rule the user scoped to one operation
  ("just this once", "for this file", "for now");
* **orphan**: a binding line of the summary that no user turn supports.

Matching is lexical (the share of the rule's content words a line carries, :mod:`core.hygiene.words`),
and semantic with the shipped all-MiniLM-L6-v2 when the semantic extra is installed (cosine);
every item says which method decided and the words or similarity that did.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..hygiene.words import overlap, words
from .markers import found
from .rules import Rule
from .summary import SummaryLine

#: a line says a rule when it carries this share of the rule's content words ...
MATCH_CONTAINMENT = 0.5
#: ... or their meaning is this close (MiniLM cosine)
MATCH_COSINE = 0.6

VERDICTS = ("kept", "weakened", "lost", "promoted", "orphan")


@dataclass(frozen=True)
class Item:
    """One ledger row (the shape of ``memdeck constraints --json``'s ``items[]``)."""

    verdict: str
    rule: str | None
    source_turn_id: int | None
    summary_line: str | None
    scope: str | None
    evidence: dict[str, Any] = field(default_factory=dict)
    method: str = "keyword"

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "rule": self.rule, "source_turn_id": self.source_turn_id,
                "summary_line": self.summary_line, "scope": self.scope, "evidence": self.evidence,
                "method": self.method}


def _subject(text: str) -> Any:
    """The :func:`core.hygiene.words.words` of ``text`` without its binding, prohibition, scope and
    narrative words: what a rule is about, not how strongly it was said."""
    from .markers import fold

    t = fold(text)
    for kind in ("binding", "negative", "once", "until", "narrative"):
        for m in found(kind, t):
            if m.isascii():
                t = re.sub(r"(?<![\w'])" + re.escape(m) + r"(?![\w'])", " ", t)
            else:
                t = t.replace(m, " ")
    return words(t)


def _negative(text: str) -> bool:
    return bool(found("negative", text))


def _binding_line(line: SummaryLine) -> bool:
    return line.binding or (line.in_constraints and not found("narrative", line.text))


def _judge(r: Rule, ln: SummaryLine, _ev: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The verdict one matching line gives a rule, and the evidence words that decided it."""
    binding = _binding_line(ln)
    if r.scope == "once" and binding and not found("once", ln.text):
        return "promoted", {"scope_words": found("once", r.text)}
    lost_neg = _negative(r.text) and not _negative(ln.text)
    narrative = found("narrative", ln.text)
    if binding and not lost_neg and not (narrative and not ln.binding):
        return "kept", {"binding_words": found("binding", ln.text) or (["(constraints section)"] if ln.in_constraints
                                                                        else [])}
    ev: dict[str, Any] = {"binding_lost": list(r.markers)}
    if lost_neg:
        ev["prohibition_lost"] = found("negative", r.text)
    if narrative:
        ev["narrative"] = narrative
    return "weakened", ev


def classify(rules: Sequence[Rule], lines: Sequence[SummaryLine], *, carried: Sequence[tuple[str, str]] = (),
             cosine: Any = None) -> list[Item]:
    """The ledger of one compaction.

    Args:
        rules: the user's rules in the compacted turns (:func:`.rules.rules_in`).
        lines: the summary's lines (:func:`.summary.summary_lines`).
        carried: ``(where, text)`` of what else keeps a rule alive: anchors (``anchor``) and
            MEMORY/USER entries (``memory`` / ``user``).
        cosine: optional ``cosine(a, b) -> float`` (semantic matching); None: keyword only.
    """
    method = "semantic" if cosine is not None else "keyword"
    items: list[Item] = []
    used: set[int] = set()
    lw = [_subject(ln.text) for ln in lines]
    for r in rules:
        rw = _subject(r.text)
        best, best_i = 0.0, None  # type: tuple[float, int | None]
        candidates: list[tuple[float, int, dict[str, Any]]] = []
        for i, ln in enumerate(lines):
            _j, _c, shared = overlap(rw.bag, lw[i].bag)
            share = len(shared) / max(1, len(rw.bag))
            score = share
            ev: dict[str, Any] = {"shared": sorted(shared), "share": round(share, 3)}
            if cosine is not None:
                c = float(cosine(r.text, ln.text))
                ev["similarity"] = round(c, 3)
                if c >= MATCH_COSINE and share < MATCH_CONTAINMENT:
                    score = max(score, MATCH_CONTAINMENT + (c - MATCH_COSINE))
            if score > best:
                best, best_i = score, i
            if score >= MATCH_CONTAINMENT:
                candidates.append((score, i, ev))
        if candidates:
            # Several lines may say the rule (0.22 quotes every compacted user message verbatim besides
            # the model's own sections): a line that states a one-operation rule as standing promotes
            # it whatever else the summary says; else one line with the binding force keeps it; else
            # the closest line weakened it.
            judged = [(_judge(r, lines[i], ev), score, i, ev) for score, i, ev in candidates]
            for want in ("promoted", "kept", "weakened"):
                pick = [j for j in judged if j[0][0] == want]
                if pick:
                    (verdict, extra), _score, i, ev = max(pick, key=lambda j: j[1])
                    break
            used.add(i)
            ev = dict(ev, **extra)
            ev["decided_by"] = "similarity" if "similarity" in ev and float(ev["share"]) < MATCH_CONTAINMENT else "words"
            items.append(Item(verdict, r.text, r.turn_id, lines[i].text, r.scope, ev, method))
            continue
        if r.scope == "once":
            continue  # a one-operation instruction the summary drops was rightly dropped
        items.append(Item("lost", r.text, r.turn_id, None, r.scope,
                          {"best_share": round(best, 3), "nearest_line": lines[best_i].text if best_i is not None
                           else None}, method))
    for i, ln in enumerate(lines):
        if i in used or not (ln.binding and ln.in_constraints):
            continue
        items.append(Item("orphan", None, None, ln.text, None,
                          {"section": ln.section, "binding_words": found("binding", ln.text)}, method))
    return apply_carried(items, carried) if carried else items


def apply_carried(items: Sequence[Item], carried: Sequence[tuple[str, str]]) -> list[Item]:
    """``items`` with each **lost** rule that an anchor or a MEMORY/USER entry carries (the share of
    the rule's content words it holds, :data:`MATCH_CONTAINMENT`) made **kept**, its evidence the
    carrier (``carried_by``: ``anchor`` | ``memory`` | ``user``). Cheap: checked when a kept ledger is
    read, so a memory change never computes a ledger again."""
    out: list[Item] = []
    bags = [(where, text, words(text).bag) for where, text in carried]
    for it in items:
        if it.verdict == "lost" and it.rule is not None and bags:
            rw = _subject(it.rule)
            for where, text, bag in bags:
                _j, _c, shared = overlap(rw.bag, bag)
                if rw.bag and len(shared) / len(rw.bag) >= MATCH_CONTAINMENT:
                    it = Item("kept", it.rule, it.source_turn_id, None, it.scope,
                              {"carried_by": where, "text": text, "shared": sorted(shared)}, it.method)
                    break
        out.append(it)
    return out
