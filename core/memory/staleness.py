"""Is a pending write still what its reviewer would approve? Its state, computed without writing.

One concept: the outcome approving a staged record would have *now*, as the Hermes that staged it
would apply it, decided on the file's current entries before anyone presses approve:

* ``clean``: the write applies and changes the file.
* ``stale``: its target entry changed or vanished since it was staged, or it would change nothing.
  Pinned records (Hermes 0.21.5 / 0.22 ``matched_entry``): the pinned entry is no longer in the
  file, refused with 0.22's own words "Entry changed since it was staged ..." (:func:`.staged.compute`).
  Records before pinning (0.17-0.21.4): Hermes 0.19's replay rule (``apply_memory_pending``:
  ``old_text`` a case-sensitive substring of exactly one distinct entry) finds no entry ("No entry
  matched '...'") or several ("... matched multiple distinct entries"). And for either: the replay
  would succeed without changing a byte (an ``add`` of an entry already there: "Entry already exists
  (no duplicate added)."; a replace by the same text), the no-op of issue #105770's "no longer
  applicable" writes.
* ``refused``: approving would be refused for another reason: the threat scan, the char limit, a
  destructive write staged without its pin ("predates entry pinning"), a malformed operation, a
  file Hermes' drift guard would not touch.

Pure: entries in, an :class:`Assessment` out. The same rules run under the lock when a record is
applied (:mod:`.replay`, :mod:`.staged`), so a record that turns stale between the listing and the
write is refused then, never applied.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import Refused
from . import staged
from .entries import hermes_match, usage_chars
from .threats import scan, threat_message

#: The states of :class:`Assessment`.
STATES = ("clean", "stale", "refused")
#: Refusal codes that mean "the target entry changed or vanished" (0.22 ``stale``; 0.19's replay
#: ``no_match`` / ``ambiguous``).
STALE_CODES = frozenset({"stale", "no_match", "ambiguous"})


@dataclass(frozen=True)
class Assessment:
    """What approving a pending write would do now.

    Attributes:
        state: ``clean``, ``stale`` or ``refused`` (module docstring).
        reason: Hermes' own words for a stale or refused record (None when clean).
        code: the refusal code (``stale``, ``no_match``, ``ambiguous``, ``noop``, ``threat``,
            ``overflow``, ``unpinned``, ``invalid``, ``empty``, ``drift``, ...), None when clean.
        semantics: ``hermes-0.22`` (pinned: ``matched_entry`` / ``patch``) or ``hermes-0.19``
            (replay by ``old_text`` substring).
    """

    state: str
    reason: str | None = None
    code: str | None = None
    semantics: str = "hermes-0.19"

    @property
    def stale(self) -> bool:
        return self.state == "stale"

    @property
    def clean(self) -> bool:
        return self.state == "clean"

    def to_dict(self) -> dict[str, Any]:
        return {"state": self.state, "reason": self.reason, "code": self.code, "semantics": self.semantics}


def _threat(text: str, what: str = "") -> str | None:
    findings = scan(text)
    return f"{what}{threat_message(findings) or 'Blocked.'}" if findings else None


def _noop(message: str, semantics: str) -> Assessment:
    return Assessment("stale", f"{message} Approving it would change nothing: it no longer applies.", "noop", semantics)


def _single_019(p: dict[str, Any], entries: list[str], limit: int) -> Assessment:
    """Hermes 0.19 ``apply_memory_pending`` of one add/replace/remove (``MemoryStore.add`` :346-396,
    ``replace`` :398-465, ``remove`` :467-505)."""
    act = p.get("action")
    content = str(p.get("content") or "").strip()
    old = str(p.get("old_text") or "").strip()
    if act == "add":
        if not content:
            return Assessment("refused", "Content cannot be empty.", "empty")
        threat = _threat(content)
        if threat:
            return Assessment("refused", threat, "threat")
        if content in entries:
            return _noop("Entry already exists (no duplicate added).", "hermes-0.19")
        new = entries + [content]
        if usage_chars(new) > limit:
            return Assessment("refused", f"Memory at {usage_chars(entries):,}/{limit:,} chars. Adding this entry "
                                         f"({len(content)} chars) would exceed the limit.", "overflow")
        return Assessment("clean")
    if act not in ("replace", "remove"):
        return Assessment("refused", f"Unknown staged action '{act}'.", "invalid")
    if not old:
        return Assessment("refused", "old_text cannot be empty.", "empty")
    if act == "replace":
        if not content:
            return Assessment("refused", "new_content cannot be empty. Use 'remove' to delete entries.", "empty")
        threat = _threat(content)
        if threat:
            return Assessment("refused", threat, "threat")
    m = hermes_match(entries, old)
    if isinstance(m, str):
        code = "no_match" if m.startswith("no entry") else "ambiguous"
        words = f"No entry matched '{old}'." if code == "no_match" else f"Multiple entries matched '{old}'. Be more specific."
        return Assessment("stale", f"{words} The entry it was staged against changed or is gone.", code)
    if act == "remove":
        return Assessment("clean")
    new = list(entries)
    new[m] = content
    if new == entries:
        return _noop(f"The entry already reads '{content}'.", "hermes-0.19")
    if usage_chars(new) > limit:
        return Assessment("refused", f"Replacement would put memory at {usage_chars(new):,}/{limit:,} chars.",
                          "overflow")
    return Assessment("clean")


def _batch_019(ops: list[Any], entries: list[str], limit: int) -> Assessment:
    """Hermes 0.19 ``apply_batch`` (:507-612): scan first, apply to a copy, budget on the end state."""
    suffix = " No operations were applied (batch is all-or-nothing)."
    if not ops:
        return Assessment("refused", "operations list is empty.", "empty")
    for i, op in enumerate(ops):
        op = op or {}
        if op.get("action") in ("add", "replace") and op.get("content"):
            threat = _threat(str(op["content"]), f"Operation {i + 1}: ")
            if threat:
                return Assessment("refused", threat, "threat")
    working = list(entries)
    for i, op in enumerate(ops):
        op = op or {}
        act = op.get("action")
        content = str(op.get("content") or "").strip()
        old = str(op.get("old_text") or "").strip()
        pos = f"Operation {i + 1} ({act or 'unknown'})"
        if act == "add":
            if not content:
                return Assessment("refused", f"{pos}: content is required.{suffix}", "invalid")
            if content not in working:
                working.append(content)
            continue
        if act not in ("replace", "remove"):
            return Assessment("refused", f"{pos}: unknown action. Use add, replace, or remove.{suffix}", "invalid")
        if not old:
            return Assessment("refused", f"{pos}: old_text is required.{suffix}", "invalid")
        if act == "replace" and not content:
            return Assessment("refused", f"{pos}: content is required (use action='remove' to delete).{suffix}",
                              "invalid")
        m = hermes_match(working, old)
        if isinstance(m, str):
            code = "no_match" if m.startswith("no entry") else "ambiguous"
            return Assessment("stale", f"{pos}: {m}{suffix}", code)
        if act == "replace":
            working[m] = content
        else:
            working.pop(m)
    if working == entries:
        return _noop(f"Applied {len(ops)} operation(s) would leave the file as it is.", "hermes-0.19")
    if usage_chars(working) > limit:
        return Assessment("refused", f"After applying all {len(ops)} operations, memory would be at "
                                     f"{usage_chars(working):,}/{limit:,} chars.{suffix}", "overflow")
    return Assessment("clean")


def assess(payload: dict[str, Any], entries: Sequence[str], limit: int, *, drift: str | None = None) -> Assessment:
    """What approving the staged ``payload`` would do now (module docstring).

    Args:
        payload: the record's ``payload`` (``action`` add/replace/remove/patch/batch, ``target`` ...).
        entries: the target file's entries now (parsed as Hermes loads them).
        limit: the target's char limit.
        drift: why the target file is not canonical (:func:`.entries.noncanonical_reason`), or None:
            0.19's replace/remove/batch refuse such a file; 0.22 refuses only an entry longer than
            the whole limit.

    Never raises.
    """
    entries = list(entries)
    if staged.is_pinned(payload):
        if drift and payload.get("action") != "add" and max((len(e) for e in entries), default=0) > limit:
            return Assessment("refused", f"the file holds an entry longer than the whole {limit:,}-char limit: Hermes "
                                         "refuses to write it", "drift", "hermes-0.22")
        try:
            new, message, _op = staged.compute(payload, entries, limit)
        except Refused as exc:
            state = "stale" if exc.code in STALE_CODES else "refused"
            return Assessment(state, exc.reason, exc.code, "hermes-0.22")
        if new == entries:
            return _noop(message, "hermes-0.22")
        return Assessment("clean", semantics="hermes-0.22")
    if drift and payload.get("action") != "add":
        return Assessment("refused", f"Hermes' drift guard refuses to rewrite the file: {drift}", "drift")
    if payload.get("action") == "batch":
        ops = payload.get("operations")
        return _batch_019(ops if isinstance(ops, list) else [], entries, limit)
    return _single_019(payload, entries, limit)


__all__ = ["Assessment", "STALE_CODES", "STATES", "assess"]
