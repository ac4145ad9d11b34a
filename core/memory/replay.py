"""Replaying Hermes' staged memory writes through ``MemoryStore``, with Hermes' own semantics.

One concept: a pending write applied as Hermes would apply it: a 0.19 batch or single action
(``apply_memory_pending`` :1052-1070, the pure substring rule) and a 0.22 pinned write
(``patch`` / ``matched_entry``, via :func:`.staged.compute`). memdeck's own selectors are not used
here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import Refused
from .entries import entries_of, entry_id, hermes_match, overflow_refusal, scan_or_refuse, serialize_entries, usage_chars
from .plumbing import StorePlumbing
from .results import WriteResult


class ReplayOps(StorePlumbing):
    """Replay methods of :class:`.store.MemoryStore` (a mixin: they use its lock, load, journal
    and write plumbing)."""

    def apply_batch(self, target: str, operations: Sequence[dict[str, Any]]) -> WriteResult:
        """All-or-nothing batch with Hermes 0.19 ``apply_batch`` semantics (:507-612).

        Every add/replace content is scanned first; ops apply to a copy in order (substring
        matching, duplicate add skipped); the budget is checked on the final state only.

        Raises:
            Refused: ``empty`` (no operations), ``invalid`` (bad op, with Hermes' per-op text),
                ``no_match``/``ambiguous``, ``threat``, ``overflow``, ``drift``, ``unreadable``.
        """
        self.path(target)
        if not operations:
            raise Refused("operations list is empty.", code="empty")
        for i, op in enumerate(operations):
            op = op or {}
            if op.get("action") in ("add", "replace") and op.get("content"):
                scan_or_refuse(str(op["content"]), f"Operation {i + 1}: ")
        with self._locked(target):
            raw, entries = self._load(target)
            working = list(entries)
            suffix = " No operations were applied (batch is all-or-nothing)."
            for i, op in enumerate(operations):
                op = op or {}
                act = op.get("action")
                content = str(op.get("content") or "").strip()
                old_text = str(op.get("old_text") or "").strip()
                pos = f"Operation {i + 1} ({act or 'unknown'})"
                if act == "add":
                    if not content:
                        raise Refused(f"{pos}: content is required.{suffix}", code="invalid")
                    if content not in working:
                        working.append(content)
                elif act in ("replace", "remove"):
                    if not old_text:
                        raise Refused(f"{pos}: old_text is required.{suffix}", code="invalid")
                    if act == "replace" and not content:
                        raise Refused(f"{pos}: content is required (use action='remove' to delete).{suffix}", code="invalid")
                    m = hermes_match(working, old_text)
                    if isinstance(m, str):
                        code = "no_match" if m.startswith("no entry") else "ambiguous"
                        raise Refused(f"{pos}: {m}{suffix}", code=code,
                                      current_entries=[e.to_dict() for e in entries_of(entries)])
                    if act == "replace":
                        working[m] = content
                    else:
                        working.pop(m)
                else:
                    raise Refused(f"{pos}: unknown action. Use add, replace, or remove.{suffix}", code="invalid")
            total, limit = usage_chars(working), self.limit(target)
            if total > limit:
                raise overflow_refusal(target, entries, total, limit, f"After applying all {len(operations)} operations, the batch")
            return self._commit("batch", target, raw, entries, working, f"Applied {len(operations)} operation(s).",
                                {"operations": [dict(o or {}) for o in operations]})

    def hermes_single(self, action: str, target: str, content: str = "", old_text: str = "") -> WriteResult:
        """One staged write replayed like Hermes 0.19 ``apply_memory_pending`` (:1052-1070).

        add -> :meth:`add`; replace/remove use Hermes' substring rule (not memdeck selectors).
        """
        if action == "add":
            return self.add(target, content)
        if action not in ("replace", "remove"):
            raise Refused(f"Unknown staged action '{action}'.", code="invalid")
        old = (old_text or "").strip()
        if not old:
            raise Refused("old_text cannot be empty.", code="empty")
        new_content = (content or "").strip()
        if action == "replace":
            new_content = self._clean(new_content, "new_content")
            scan_or_refuse(new_content)
        with self._locked(target):
            raw, entries = self._load(target)
            m = hermes_match(entries, old)
            if isinstance(m, str):
                code = "no_match" if m.startswith("no entry") else "ambiguous"
                raise Refused(m[0].upper() + m[1:], code=code, current_entries=[e.to_dict() for e in entries_of(entries)])
            if action == "replace":
                return self._replace_at(target, raw, entries, m, new_content, "replace", "Entry replaced.")
            gone = entries[m]
            return self._commit("remove", target, raw, entries, entries[:m] + entries[m + 1:], "Entry removed.",
                                {"entry_id": entry_id(gone), "text": gone}, entry_id(gone))

    def replay_pinned(self, payload: dict[str, Any]) -> WriteResult:
        """Apply a pinned pending write (Hermes 0.22 ``patch`` / ``matched_entry``) under the lock.

        The new entries come from :func:`.staged.compute` (0.22 ``apply_memory_pending``
        semantics); the file is written as ``"\n§\n".join(entries)`` like 0.22
        ``_write_file``. The drift guard is 0.22's (``tools/memory_tool_store.py:685-700``): only
        an entry longer than the whole limit refuses (a ``.bak.<ts>`` snapshot is kept).

        Raises:
            Refused: every refusal of :func:`.staged.compute`, plus ``drift``/``unreadable``.
        """
        from . import staged

        target = str(payload.get("target") or "memory")
        self.path(target)
        with self._locked(target):
            raw, entries = self._load(target, canonical_check=False)
            limit = self.limit(target)
            longest = max((len(e) for e in entries), default=0)
            if longest > limit and payload.get("action") != "add":
                bak = self._backup(self.path(target))
                raise Refused(f"Refusing to write {self.path(target).name}: it holds an entry of {longest:,} chars, "
                              f"larger than the whole {limit:,}-char limit. A snapshot was saved to {bak}.",
                              code="drift", drift_backup=bak)
            new, message, op = staged.compute(payload, entries, limit)
            if new == entries:
                return self._result(op, target, new, message, changed=False)
            jid = self._wal_write(target, raw, serialize_entries(new), op,
                                  {"payload": dict(payload), "semantics": "hermes-0.22"})
            self._cleanup_temps([target])
            return self._result(op, target, new, message, journal_id=jid)

