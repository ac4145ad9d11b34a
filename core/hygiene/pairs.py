"""The verdict on one pair of entries: ``duplicate``, ``contradiction`` or ``distinct``, with the
evidence that decided it (the rule is memdeck's; its thresholds are calibrated on the
hand-labelled pairs in ``tests/fixtures/hygiene/pairs.yaml`` by ``bench/bench_hygiene.py``).

* **duplicate**: the same polarity, no differing value, and the meaning overlaps: cosine >=
  :data:`DUPLICATE_COSINE` (semantic) or the words overlap (containment >=
  :data:`DUPLICATE_CONTAINMENT` and Jaccard >= :data:`DUPLICATE_JACCARD`, either method);
* **contradiction**: the same subject (the words that are not values overlap: containment >=
  :data:`SUBJECT_CONTAINMENT` of the smaller set, at least one word shared) and either a value
  only one side has on both sides (``pi.local`` / ``pi.lan``, ``3.11`` / ``3.12``) or opposite
  polarity (``prefers tabs`` / ``never use tabs``). It is a candidate: the newer entry is not
  assumed right;
* **distinct**: anything else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .words import Words, overlap, words

#: semantic duplicates: MiniLM cosine at or above this (bench/bench_hygiene.py sweeps it)
DUPLICATE_COSINE = 0.80
#: lexical duplicates: the share of the smaller entry's words found in the other ...
DUPLICATE_CONTAINMENT = 0.75
#: ... and the Jaccard overlap of the two sets of words
DUPLICATE_JACCARD = 0.5
#: the same subject: the share of the smaller set of non-value words found in the other
SUBJECT_CONTAINMENT = 0.75

DUPLICATE, CONTRADICTION, DISTINCT = "duplicate", "contradiction", "distinct"


@dataclass(frozen=True)
class PairVerdict:
    """``kind`` (duplicate | contradiction | distinct) and ``evidence``: ``similarity`` (cosine,
    or None for the lexical method), ``jaccard``, ``containment``, ``shared`` words, and for a
    contradiction ``values`` ({"a": [...], "b": [...]}: what differs) and/or ``polarity``."""

    kind: str
    evidence: dict[str, Any] = field(default_factory=dict)


def classify(a: str, b: str, cosine: float | None = None, *, wa: Words | None = None, wb: Words | None = None,
             duplicate_cosine: float = DUPLICATE_COSINE) -> PairVerdict:
    """The :class:`PairVerdict` of entries ``a`` and ``b`` (texts); ``cosine`` their MiniLM
    similarity (None: lexical only). ``wa``/``wb``: their :func:`.words.words`, when known."""
    wa = wa if wa is not None else words(a)
    wb = wb if wb is not None else words(b)
    jac, cont, shared = overlap(wa.bag, wb.bag)
    evidence: dict[str, Any] = {"similarity": None if cosine is None else round(float(cosine), 3),
                                "jaccard": round(jac, 3), "containment": round(cont, 3),
                                "shared": sorted(shared)}
    only_a, only_b = sorted(wa.values - wb.values), sorted(wb.values - wa.values)
    polarity_conflict = wa.negated != wb.negated
    change_conflict = wa.changed != wb.changed
    na, nb = wa.subject, wb.subject
    _sj, subject, subject_shared = overlap(na, nb)
    same_subject = bool(subject_shared) and subject >= SUBJECT_CONTAINMENT
    # a value differs only when the rest says the same thing: "max line length 100" / "max line
    # length 120", never "max line length 100" / "max function length 50"
    value_conflict = bool(only_a) and bool(only_b) and same_subject and _only_function_words(wa, wb, na, nb)
    if same_subject and (value_conflict or polarity_conflict or (change_conflict and not (shared - subject_shared))):
        if value_conflict:
            evidence["values"] = {"a": only_a, "b": only_b}
        if change_conflict:
            evidence["change"] = "a" if wa.changed else "b"
        if polarity_conflict:
            evidence["polarity"] = {"a": "negative" if wa.negated else "positive",
                                    "b": "negative" if wb.negated else "positive"}
        evidence["subject"] = sorted(subject_shared)
        return PairVerdict(CONTRADICTION, evidence)
    if (only_a and only_b) or polarity_conflict:  # differing values or polarity: never the same entry
        return PairVerdict(DISTINCT, evidence)
    lexical_dup = cont >= DUPLICATE_CONTAINMENT and jac >= DUPLICATE_JACCARD
    semantic_dup = cosine is not None and cosine >= duplicate_cosine
    if lexical_dup or semantic_dup:
        evidence["decided_by"] = "semantic" if semantic_dup and not lexical_dup else "lexical" if not semantic_dup else "both"
        return PairVerdict(DUPLICATE, evidence)
    return PairVerdict(DISTINCT, evidence)


def may_not_be_distinct(wa: Words, wb: Words, cosine: float | None = None,
                        duplicate_cosine: float = DUPLICATE_COSINE) -> bool:
    """False when :func:`classify` would surely say ``distinct`` and neither entry's words are all
    in the other (so neither can be wasteful): the cosine is under ``duplicate_cosine`` (or
    unknown), the shared share of the smaller set of words is under :data:`DUPLICATE_CONTAINMENT`,
    and that of the smaller set of non-value words under :data:`SUBJECT_CONTAINMENT` (or none is
    shared). A necessary condition only, a few set operations: most pairs of a memory stop here
    (``core/hygiene/detect.py``; the 3,500 pairs of a full memory cost 25 ms in ``classify``)."""
    if cosine is not None and cosine >= duplicate_cosine:
        return True
    ba, bb = wa.bag, wb.bag
    shared = len(ba & bb)
    if not shared:
        return False
    if shared >= min(DUPLICATE_CONTAINMENT, 1.0) * min(len(ba), len(bb)):
        return True
    na, nb = wa.subject, wb.subject
    subject = len(na & nb)
    return bool(subject) and subject >= SUBJECT_CONTAINMENT * min(len(na), len(nb))


def _only_function_words(wa: Words, wb: Words, na: frozenset[str], nb: frozenset[str]) -> bool:
    """True when the words two entries do not share (values aside) are only change words, or,
    in CJK text, only change and function characters."""
    from .words import CJK_CHANGE, CJK_FUNCTION

    cjk = wa.cjk_chars | wb.cjk_chars
    if any(not cjk.intersection(t) for t in na ^ nb):  # a Latin-script word only one side has
        return False
    chars = wa.cjk_chars ^ wb.cjk_chars
    return chars <= (CJK_CHANGE | CJK_FUNCTION)
