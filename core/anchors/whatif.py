"""What-if before you pin: how an anchor would have fared at each past compaction of a session.

One concept: replaying a not-yet-pinned anchor through every compaction memdeck reconstructed
from state.db. For each compaction the region MemLock audited on the next turn
(:meth:`StateDB.region_after`, :func:`core.anchors.audit.audited_region`) is audited with the
session's anchors plus this one, with the configured detection (keyword probes, or the semantic
audit on memdeck's verified model; the same fallback as the audit when the model cannot be used):
its verdict, the integrity score the session would have had, and the reminder block MemLock
would have injected on that turn (``inject``, ``max_slots``, ``max_reminder_chars``;
:func:`core.anchors.rehydration.plan_reminder`). Suggested probes are the words of the text
(MemLock's probe token rule, all of them, not only the first 5) that survive in the compacted
summaries, most often first.

An anchor with the same text and probes as one the session holds is that anchor: it takes its
place (``replaces``), so the what-if of a pinned anchor reproduces its recorded verdicts.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..memory.prompt_block import BLOCK_SEPARATOR, MEMORY_BLOCK_HEADERS
from .audit import AnchorVerdict, audited_region, integrity_score, run_audit
from .integrity_history import detection_encoder, session_events, session_system_prompt
from .lifecycle import session_anchor_set
from .model import validate_priority, validate_probes
from .rehydration import plan_reminder
from .rules import (
    PROBE_STOPWORDS,
    anchor_id_of,
    auto_reminder,
    flatten_ws,
    memlock_cfg,
    probes_of,
    reminder_of,
)

#: The id the hypothetical anchor carries in verdicts and reminder blocks (never a MemLock id).
WHAT_IF_ID = "what-if"
#: At most this many suggested probes (MemLock derives at most 5).
MAX_SUGGESTED = 5
_WORD_RE = re.compile(r"\b[a-zA-Z]{4,}\b")
#: English function words and adverbs of 4+ letters that MemLock's 20 stopwords let through: never
#: suggested as probes (a probe "always" or "instead" is found in almost any conversation, so it
#: proves nothing about the instruction). Derived probes keep MemLock's own rule.
SUGGESTION_STOPWORDS = frozenset({
    "also", "always", "another", "anyone", "anything", "away", "back", "because", "before", "being", "both",
    "cannot", "does", "doing", "done", "down", "each", "either", "else", "even", "ever", "every", "everyone",
    "everything", "first", "here", "however", "instead", "into", "itself", "just", "last", "less", "like",
    "make", "many", "more", "most", "much", "must", "myself", "need", "never", "next", "often", "once", "only",
    "onto", "other", "otherwise", "ours", "over", "please", "rather", "really", "same", "shall", "should",
    "since", "some", "something", "sometimes", "still", "such", "sure", "than", "them", "then", "thing",
    "things", "though", "through", "under", "unless", "until", "upon", "usually", "very", "want", "well",
    "what", "whatever", "where", "whether", "while", "whom", "whose", "within", "without", "yours",
})
_BLOCK_HEAD_RE = re.compile(
    BLOCK_SEPARATOR + r"\n(" + "|".join(re.escape(h) for h in MEMORY_BLOCK_HEADERS.values()) + r")"
    r" \[\d+% — ([\d,]+)/[\d,]+ chars\][^\n]*\n" + BLOCK_SEPARATOR + r"\n")
_FILE_OF_HEADER = {MEMORY_BLOCK_HEADERS["memory"]: "MEMORY.md", MEMORY_BLOCK_HEADERS["user"]: "USER.md"}


@dataclass(frozen=True)
class WhatIfPoint:
    """The anchor at one compaction.

    Attributes:
        compaction_id: the compaction's 1-based index among the session's (``event_index`` of the
            integrity history).
        at: when it happened (epoch seconds).
        verdict: the anchor's :class:`AnchorVerdict` on the region after it.
        score: the session's integrity score (percent 0-100) with this anchor among its anchors.
        reminder_block: what MemLock would have injected on that turn (``""``: nothing).
        in_reminder_block: whether this anchor's reminder is in that block (a drifted anchor
            left out by ``max_slots``/``max_reminder_chars`` is not).
        summary_words: the words of the text found in that compaction's summary.
    """

    compaction_id: int
    at: float
    verdict: AnchorVerdict
    score: int | None
    reminder_block: str
    summary_words: tuple[str, ...]
    in_reminder_block: bool = False

    @property
    def alive(self) -> bool:
        return self.verdict.alive

    def to_dict(self) -> dict[str, Any]:
        """``{compaction_id, at, verdict: "alive"|"drifted", score, method, similarity, hits,
        probes, missing, reminder_block, in_reminder_block, summary_words}``."""
        v = self.verdict
        return {"compaction_id": self.compaction_id, "at": self.at, "verdict": "alive" if v.alive else "drifted",
                "score": self.score, "method": v.method, "similarity": v.similarity, "hits": v.hits,
                "probes": list(v.probes), "missing": list(v.missing), "reminder_block": self.reminder_block,
                "in_reminder_block": self.in_reminder_block, "summary_words": list(self.summary_words)}


@dataclass(frozen=True)
class WhatIf:
    """The replay of one anchor through a session's compactions.

    Attributes:
        session_id: the session.
        anchor: the hypothetical anchor ``{id, text, reminder, priority, probes}`` (flattened,
            probes derived when none were given, as a pin would store them).
        replaces: the id of the session's anchor with the same text and probes, else None.
        points: one per compaction, oldest first (those not replayed yet are left out; see
            ``pending``).
        pending: compactions not replayed (a ``budget_s`` ran out; newest are replayed first).
        compactions: the session's compaction count.
        suggested_probes: ``(word, summaries it survives in)``, most frequent first.
        method: ``keyword``, ``semantic`` or ``keyword-fallback`` (semantic configured but not usable).
        detection: the :class:`core.anchors.encoder.DetectionStatus`, or None (a caller's encoder).
        carried_by: ``"MEMORY.md"`` or ``"USER.md"`` when that file's block in the session's
            system prompt holds the anchor (its text, or every one of its probes): MemLock audits
            the system prompt too, so the anchor is found alive whatever the conversation says
            (:func:`carried_by`); None otherwise.
    """

    session_id: str
    anchor: dict[str, Any]
    replaces: str | None
    points: tuple[WhatIfPoint, ...]
    pending: int
    compactions: int
    suggested_probes: tuple[tuple[str, int], ...]
    method: str
    detection: Any = None
    carried_by: str | None = None

    @property
    def alive_count(self) -> int:
        return sum(1 for p in self.points if p.alive)


def carried_by(system_prompt: str | None, text: str, probes: Sequence[str]) -> str | None:
    """``"MEMORY.md"``/``"USER.md"`` when that store's block in ``system_prompt`` holds ``text``
    (case and whitespace aside) or every one of ``probes`` (case-insensitive substrings, as the
    keyword audit matches them); None otherwise or without a prompt. A block is cut by its
    header's char count (the format of ``core/memory/prompt_block.py``, Hermes 0.19
    ``tools/memory_tool.py:674-691``)."""
    prompt = system_prompt or ""
    flat = " ".join(str(text or "").lower().split())
    for m in _BLOCK_HEAD_RE.finditer(prompt):
        try:
            body = prompt[m.end():m.end() + int(m.group(2).replace(",", ""))].lower()
        except ValueError:
            continue
        if (flat and flat in " ".join(body.split())) or (probes and all(str(p).lower() in body for p in probes)):
            return _FILE_OF_HEADER[m.group(1)]
    return None


def candidate_words(text: str) -> list[str]:
    """Every probe-like word of ``text`` in order (MemLock ``_derive_probes``' rule: lowercase
    ASCII words of >= 4 letters minus the 20 stopwords, de-duplicated), without the cap of 5."""
    out: list[str] = []
    for w in _WORD_RE.findall(str(text or "").lower()):
        if w not in PROBE_STOPWORDS and w not in out:
            out.append(w)
    return out


def hypothetical_anchor(text: str, *, probes: Sequence[str] | None = None, priority: Any = 50,
                        reminder: str | None = None) -> dict[str, Any]:
    """The anchor a pin of ``text`` would store (``core.anchors.store.AnchorStore.pin``'s rules:
    whitespace flattened, reminder = first sentence when empty, probes derived when none).

    Raises:
        core.errors.Refused: empty text, a priority not 1-100, probes not a list of non-empty strings.
    """
    from ..errors import Refused

    flat = flatten_ws(text)
    if not flat:
        raise Refused("the what-if needs the anchor's text", "empty", field="text")
    prio = validate_priority(priority)
    prb = validate_probes(list(probes) if probes else None, flat)
    rem = flatten_ws(reminder) or auto_reminder(flat)
    return {"id": WHAT_IF_ID, "text": flat, "reminder": rem, "priority": prio, "probes": prb}


def what_if(db: Any, store: Any, session_id: str, text: str, *, probes: Sequence[str] | None = None,
            priority: Any = 50, reminder: str | None = None, config: Any = None, encoder: Any = None,
            budget_s: float | None = None, progress: Callable[[int, int], None] | None = None) -> WhatIf:
    """Replay ``text`` as an anchor of ``session_id`` through each of its compactions.

    Args:
        db: a :class:`core.sessions.statedb.StateDB`; store: an :class:`core.anchors.store.AnchorStore`.
        text, probes, priority, reminder: the anchor, as ``memdeck pin`` takes it.
        config: ``Config``/``MemlockConfig`` (None: the store's).
        encoder: a semantic encoder (None: memdeck's verified model when ``detection: semantic``).
        budget_s: stop replaying after this many seconds (newest compactions first; the rest
            are counted in ``pending``); None: every compaction.
        progress: ``progress(done, total)`` before each compaction replayed (may raise to stop).

    Raises:
        core.errors.Refused: bad text, priority or probes (:func:`hypothetical_anchor`).
        core.errors.UnreadableFile: the session's MemLock file is not valid JSON.
    """
    cfg = memlock_cfg(config if config is not None else store.config)
    new = hypothetical_anchor(text, probes=probes, priority=priority, reminder=reminder)
    _session, anchors, _report = session_anchor_set(store, session_id, cfg)
    same = next((a for a in anchors if flatten_ws(getattr(a, "text", "")) == new["text"]
                 and probes_of(a) == new["probes"]), None)
    others = [a for a in anchors if same is None or anchor_id_of(a) != anchor_id_of(same)]
    home = getattr(store, "home", None)
    detection = None
    if encoder is None:
        from .encoder import semantic_encoder

        encoder, detection = semantic_encoder(cfg, home)
    encoder, _ident = detection_encoder(cfg, encoder, home)
    system_prompt = session_system_prompt(db, session_id)
    events = session_events(db, session_id)
    marked = [{"id": anchor_id_of(a), "text": str(getattr(a, "text", "")), "reminder": reminder_of(a),
               "priority": getattr(a, "priority", 50)} for a in others] + [new]
    points: dict[int, WhatIfPoint] = {}
    words = candidate_words(new["text"])
    survived = {w: 0 for w in words}
    methods: set[str] = set()
    started = time.monotonic()
    for done, ev in enumerate(reversed(events)):  # newest first
        if budget_s is not None and done and time.monotonic() - started >= budget_s:
            break
        if progress is not None:
            progress(done, len(events))
        rows = db.region_after(ev)
        verdicts = run_audit([*others, new], audited_region(rows, system_prompt), cfg, encoder=encoder, home=home)
        mine = verdicts[WHAT_IF_ID]
        methods.add(mine.method)
        drifted = [k for k, v in verdicts.items() if not v.alive]
        block, selected, _rem = plan_reminder(marked, drifted, cfg)
        summary = _summary_body(rows, ev)
        found = tuple(w for w in words if w in summary)
        for w in found:
            survived[w] += 1
        points[ev.index] = WhatIfPoint(ev.index, float(ev.time), mine, integrity_score(verdicts.values()), block, found,
                                     WHAT_IF_ID in selected)
    suggested = sorted(((w, n) for w, n in survived.items() if n and w not in SUGGESTION_STOPWORDS),
                       key=lambda x: (-x[1], words.index(x[0])))
    shown_new = dict(new, id=anchor_id_of(same)) if same is not None else new
    return WhatIf(session_id=session_id, anchor=shown_new, replaces=anchor_id_of(same) if same is not None else None,
                  points=tuple(points[e.index] for e in events if e.index in points),
                  pending=len(events) - len(points), compactions=len(events),
                  suggested_probes=tuple(suggested[:MAX_SUGGESTED]),
                  method=sorted(methods)[0] if methods else ("semantic" if _is_semantic(cfg) and encoder is not None
                                                              else "keyword"),
                  detection=detection, carried_by=carried_by(system_prompt, new["text"], new["probes"]))


def _is_semantic(cfg: Any) -> bool:
    return str(getattr(cfg, "detection", "keyword")).strip().lower() == "semantic"


def _summary_body(rows: Sequence[Any], event: Any) -> str:
    """The lowercased summary text of ``event`` among its region's rows ('' when not found)."""
    from ..sessions.compaction import match_summary, message_text

    for m in rows:
        if event.summary_message_id is not None and getattr(m, "id", None) != event.summary_message_id:
            continue
        match = match_summary(message_text(m.as_dict() if hasattr(m, "as_dict") else m))
        if match is not None:
            return match.body.lower()
    return ""
