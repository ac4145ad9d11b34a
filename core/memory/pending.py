"""Pending memory writes: Hermes' write-approval staging in ``$HERMES_HOME/pending/memory``.

Record format (Hermes 0.19 ``tools/write_approval.py`` ``stage_write`` :114-151): one
``<id>.json`` per staged write with ``id`` (8 hex), ``subsystem``, ``action``, ``summary``,
``origin`` (``foreground``/``background_review``), ``created_at`` (epoch seconds) and
``payload`` = ``{action, target, content, old_text}`` or ``{action: "batch", target,
operations}``.

* :func:`list_pending` lists every ``*.json`` (oldest first, as Hermes' ``list_pending``),
  threat-scans each payload, and lists a malformed record as malformed instead of failing.
* :func:`approve` replays the payload through memdeck's core exactly as the staging Hermes'
  ``apply_memory_pending`` would: a record carrying ``matched_entry`` or a ``patch`` action
  (Hermes 0.22) follows 0.22 (``tools/memory_tool.py:353-373``: each destructive op applies to
  exactly its pinned entry or is refused, "Entry changed since it was staged"; see
  :mod:`.staged`); any other record follows 0.19 (``tools/memory_tool.py`` :1052-1070, batch
  included, substring matching). The record is applied at most once (:mod:`.approval`): set
  aside before the file changes, removed once the write is journaled ``done``, and never
  replayed when the journal holds an approval of the same bytes; a refused replay keeps the
  record, as Hermes' ``_approve`` does (``hermes_cli/write_approval_commands.py``).
* :func:`reject` removes the record and journals it (``op="reject"``, detail = the record);
  :func:`unreject` stages a rejected record again from the journal's copy (the undo of a reject).
* Who staged a record (:attr:`PendingWrite.staged_by`): Hermes' own write gate writes
  ``subsystem: "memory"`` and the write origin of its skill-provenance ContextVar
  (``tools/write_approval.py`` ``stage_write`` / ``current_origin``, every version 0.17-0.22:
  :data:`HERMES_ORIGINS`). A record in ``pending/memory`` with another subsystem or origin was put
  there by a memory provider or another subsystem: it is listed as theirs and never applied to
  MEMORY.md/USER.md by memdeck (``approve`` refuses it, ``foreign``).

Note on write approval: ``memory.write_approval`` gates the *agent's* writes (Hermes stages
them here). memdeck's own CLI/TUI writes are direct user actions and are applied directly;
approving here is the user's decision for an agent write.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

from .. import jsondata
from ..config import Config, load_config
from ..deck import db as deckdb
from ..deck import journal
from ..errors import Refused
from ..fsio import NOT_UTF8_NAME, atomic_write_bytes, list_names, read_regular_bytes
from ..home import TARGETS, HermesHome
from . import approval, staged
from .approval import RecordClaim
from .results import WriteResult
from .threats import pattern_ids, scan

_ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

#: The largest pending record memdeck reads, in bytes. Hermes stages one memory write per record
#: (its content fits a memory file's char limit, a few KB); a larger record is listed as
#: malformed, never parsed or threat-scanned.
MAX_PENDING_BYTES = 1 << 20
#: The write origins Hermes' own gate records (``tools/write_approval.py`` ``current_origin``: the
#: ``tools/skill_provenance.py`` ContextVar, default ``foreground``; ``AIAgent._memory_write_origin``
#: ``assistant_tool`` for a turn's tool calls and ``background_review`` for the review fork,
#: 0.17-0.22; ``side_question`` from 0.21).
HERMES_ORIGINS = frozenset({"foreground", "assistant_tool", "background_review", "side_question"})
#: The subsystem of a memory record staged by Hermes (``write_approval.MEMORY``).
HERMES_SUBSYSTEM = "memory"


@dataclass(frozen=True)
class PendingWrite:
    """One staged write.

    Attributes:
        id: the record id (file stem). path: the record file.
        action: ``add``/``replace``/``remove``/``patch``/``batch`` ('' when unknown).
        target: ``memory``/``user`` (Hermes' default ``memory`` when absent).
        origin, summary, created_at (epoch seconds, 0 when absent), payload (the raw dict).
        threats: pattern ids found in the payload's add/replace contents.
        findings: the findings as dicts (id, start, end, excerpt), per content scanned.
        malformed: why the record cannot be applied, or None.
        text: the content shown to a reviewer (content, or the batch's operations listed).
        subsystem: the record's ``subsystem`` (Hermes' ``memory`` when absent).
        applying: True for a record set aside as ``<id>.json.applying`` that could not be
            settled when it was listed (an approval in progress in another process, or one whose
            outcome the journal could not decide): shown, never approvable (:func:`list_pending`).
    """

    id: str
    path: Path
    action: str = ""
    target: str = "memory"
    origin: str = "foreground"
    summary: str = ""
    created_at: float = 0.0
    payload: dict[str, Any] = field(default_factory=dict)
    threats: tuple[str, ...] = ()
    findings: tuple[dict[str, Any], ...] = ()
    malformed: str | None = None
    text: str = ""
    subsystem: str = HERMES_SUBSYSTEM
    applying: bool = False

    @property
    def staged_by(self) -> str | None:
        """Who staged it when it was not Hermes' own write gate (a memory provider or another
        subsystem: its origin, else its subsystem), or None for Hermes (module docstring)."""
        if self.subsystem != HERMES_SUBSYSTEM:
            return self.subsystem or "an unnamed subsystem"
        if self.origin not in HERMES_ORIGINS:
            return self.origin
        return None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "action": self.action, "target": self.target, "origin": self.origin,
                "summary": self.summary, "created_at": self.created_at, "threats": list(self.threats),
                "malformed": self.malformed, "text": self.text, "payload": self.payload,
                "subsystem": self.subsystem, "staged_by": self.staged_by, "applying": self.applying}


def _ops(payload: dict[str, Any]) -> list[Any]:
    """A batch's operations when they are a list (anything else is malformed: no operations)."""
    ops = payload.get("operations")
    return ops if isinstance(ops, list) else []


def _contents(payload: dict[str, Any]) -> list[str]:
    """The texts a replay would write (add/replace contents; a 0.22 ``patch``'s new span and,
    when pinned, the patched entry), for scanning."""
    ops = [op for op in _ops(payload) if isinstance(op, dict)] if payload.get("action") == "batch" else [payload]
    out = []
    for op in ops:
        act, content = op.get("action"), op.get("content") or op.get("new_text")
        if act in ("add", "replace", "patch") and isinstance(content, str) and content:
            out.append(content)
        matched, old = op.get("matched_entry"), op.get("old_text")
        if act == "patch" and isinstance(matched, str) and isinstance(old, str) and old and isinstance(content, str):
            out.append(matched.replace(old, content, 1))
    return list(dict.fromkeys(out))


def replay_texts(payload: dict[str, Any]) -> list[str]:
    """The texts approving ``payload`` would write into memory (for threat scans), deduplicated."""
    return _contents(payload)


def _describe(payload: dict[str, Any]) -> str:
    act = payload.get("action")
    if act == "batch":
        lines = []
        for op in _ops(payload):
            op = op if isinstance(op, dict) else {}
            a = op.get("action", "?")
            if a == "remove":
                lines.append(f"- remove: {op.get('old_text', '')}")
            elif a in ("replace", "patch"):
                lines.append(f"- {a}: {op.get('old_text', '')} -> {op.get('content', '')}")
            else:
                lines.append(f"- {a}: {op.get('content', '')}")
            if a in ("replace", "remove", "patch") and op.get("matched_entry") is not None:
                lines.append(f"  (entry reviewed: {op.get('matched_entry')})")
        return "\n".join(lines)
    pinned = payload.get("matched_entry")
    tail = f"\nentry reviewed: {pinned}" if pinned is not None and act in ("replace", "remove", "patch") else ""
    if act in ("replace", "patch"):
        return f"old: {payload.get('old_text') or ''}\nnew: {payload.get('content') or ''}{tail}"
    if act == "remove":
        return f"{payload.get('old_text') or ''}{tail}"
    if act == "remove":
        return str(payload.get("old_text") or "")
    return str(payload.get("content") or "")


def _problem(rec: Any) -> str | None:
    if not isinstance(rec, dict):
        return "the record is not a JSON object"
    payload = rec.get("payload")
    if not isinstance(payload, dict):
        return "the record has no payload object"
    act = payload.get("action")
    if not isinstance(act, str) or act not in ("add", "replace", "remove", "patch", "batch"):
        return f"unknown staged action {_shown(act)}"
    target = payload.get("target", "memory") or "memory"
    if not isinstance(target, str) or target not in TARGETS:
        return f"invalid target {_shown(target)}"
    if act == "batch":
        ops = payload.get("operations")
        if not isinstance(ops, list) or not all(isinstance(o, dict) or o is None for o in ops):
            return "batch operations is not a list of objects"
        for i, op in enumerate(ops):
            for key in ("content", "old_text", "matched_entry"):
                if op and op.get(key) is not None and not isinstance(op.get(key), str):
                    return f"operation {i + 1}: {key} is not a string"
    for key in ("content", "old_text", "matched_entry"):
        if payload.get(key) is not None and not isinstance(payload.get(key), str):
            return f"{key} is not a string"
    return None


def _shown(value: Any, width: int = 60) -> str:
    """``repr(value)`` cut to ``width`` chars: a reason quoting a hostile field stays short."""
    r = repr(value)
    return r if len(r) <= width else r[: width - 1] + "…"


def _text(value: Any) -> str:
    """A record field that must be text: itself when it is a string, else ``""``."""
    return value if isinstance(value, str) else ""


def load_record(path: Path) -> PendingWrite:
    """Parse one record file (never raises: problems are reported in ``malformed``): a record over
    :data:`MAX_PENDING_BYTES`, not UTF-8, not JSON, nested too deeply or holding a lone surrogate
    (:func:`core.jsondata.loads`), or with fields of the wrong type is listed as malformed."""
    pid = path.name[:-5] if path.name.endswith(".json") else path.name
    try:
        raw = read_regular_bytes(path, max_bytes=MAX_PENDING_BYTES)
        rec = jsondata.loads(raw[3:] if raw.startswith(b"\xef\xbb\xbf") else raw)
    except (OSError, UnicodeDecodeError) as exc:
        return PendingWrite(pid, path, malformed=f"cannot read the record: {exc}")
    except ValueError as exc:
        return PendingWrite(pid, path, malformed=f"not valid JSON: {exc}")
    problem = _problem(rec)
    if problem and not isinstance(rec, dict):
        return PendingWrite(pid, path, malformed=problem)
    payload = rec.get("payload") if isinstance(rec.get("payload"), dict) else {}
    findings: list[dict[str, Any]] = []
    ids: list[str] = []
    for text in _contents(payload):
        f = scan(text)
        findings.extend(x.to_dict() for x in f)
        ids.extend(pattern_ids(f))
    try:
        created = float(rec.get("created_at") or 0.0)
    except (TypeError, ValueError, OverflowError):
        created = 0.0
    if not math.isfinite(created):
        created = 0.0
    return PendingWrite(
        id=str(rec.get("id") or pid) if _ID_RE.match(str(rec.get("id") or pid)) else pid, path=path,
        action=_text(payload.get("action")) or _text(rec.get("action")),
        target=_text(payload.get("target")) or "memory",
        origin=_text(rec.get("origin")) or "foreground", summary=_text(rec.get("summary")), created_at=created,
        payload=payload, threats=tuple(dict.fromkeys(ids)), findings=tuple(findings), malformed=problem,
        text=_describe(payload), subsystem=str(rec.get("subsystem") or HERMES_SUBSYSTEM),
    )


#: how long a listing waits for the memory files' locks to settle a set-aside record (seconds):
#: a live approval holds them for one write; past this the record is shown as being applied
SETTLE_LOCK_TIMEOUT = 1.0

#: what a reviewer is told about a set-aside record that could not be settled
APPLYING_WORDS = ("being applied (set aside as .applying by an approval in progress, or by one whose outcome "
                  "could not be settled): not approvable now")


def _aside_names(d: Path) -> list[str]:
    try:
        return sorted(n for n in os.listdir(d) if n.endswith(".json" + approval.APPLYING_SUFFIX))
    except OSError:
        return []


def settle_set_aside(home: HermesHome) -> None:
    """Settle records an interrupted approval left set aside (``<id>.json.applying``, see
    :mod:`.approval`): the recovery every memdeck write runs first
    (:func:`.store.recover_intents`), run here by every listing so a killed bulk approval never
    hides a record until the next memory write. A no-op (no lock, no database) when nothing is
    set aside. Never raises: a lock held past :data:`SETTLE_LOCK_TIMEOUT` (an approval in
    progress) or a read-only home leaves the record for :func:`list_pending` to show."""
    if not _aside_names(home.pending_dir):
        return
    from .store import recover_intents  # lazy, as in approve

    with contextlib.suppress(Exception):  # a listing never fails on recovery: the record is shown instead
        recover_intents(home, lock_timeout=SETTLE_LOCK_TIMEOUT)


def list_pending(home: HermesHome) -> list[PendingWrite]:
    """Every pending memory write, oldest first (by ``created_at``). Never raises.

    A record set aside by an interrupted approval is settled first (:func:`settle_set_aside`:
    staged again, or removed when the journal says it was applied); one that cannot be settled
    now is listed with ``applying=True`` (never hidden, never approvable)."""
    d = home.pending_dir
    settle_set_aside(home)
    try:
        names, undecodable = list_names(d, ".json")
    except OSError:
        return []
    paths = [p for p in (d / n for n in names) if p.is_file()]
    recs = [load_record(p) for p in paths]
    recs += [PendingWrite(shown[:-5], d / shown, malformed=NOT_UTF8_NAME) for shown in undecodable]
    listed = {r.path.name for r in recs}
    for aside in _aside_names(d):
        record_file = aside[:-len(approval.APPLYING_SUFFIX)]
        if record_file in listed or not _ID_RE.match(record_file[:-5]):
            continue
        rec = load_record(d / aside)
        recs.append(replace(rec, id=record_file[:-5], applying=True))
    recs.sort(key=lambda r: (r.created_at, r.id))
    return recs


@dataclass(frozen=True)
class Edit:
    """A reviewer's text in place of a staged write's (edit before approve, Hermes PR #44966).

    Attributes:
        text: the new ``content``: the whole entry of an add or replace, the new span of a patch.
        op: the operation of a batch to edit (1-based); None for a single write.
    """

    text: str
    op: int | None = None

    def _op_of(self, payload: dict[str, Any]) -> dict[str, Any]:
        if payload.get("action") == "batch":
            ops = payload.get("operations")
            if self.op is None:
                raise Refused("this pending write is a batch: say which operation to edit (--op N)", code="invalid")
            if not isinstance(ops, list) or not 1 <= self.op <= len(ops) or not isinstance(ops[self.op - 1], dict):
                raise Refused(f"this batch has no operation {self.op}", code="invalid")
            op = ops[self.op - 1]
        else:
            if self.op not in (None, 1):
                raise Refused("this pending write is a single write: it has no operation "
                              f"{self.op}", code="invalid")
            op = payload
        if op.get("action") not in ("add", "replace", "patch"):
            raise Refused(f"a {op.get('action') or 'write'} has no text to edit: only an add, a replace or a patch "
                          "can be edited before approval", code="invalid")
        return op

    def staged_text(self, rec: PendingWrite) -> str:
        """The text the record staged for the edited op."""
        op = self._op_of(rec.payload)
        return str(op.get("content") or op.get("new_text") or "")

    def payload_of(self, rec: PendingWrite) -> dict[str, Any]:
        """The record's payload with the edited op's text replaced (a copy; the record is untouched).

        Raises:
            Refused: ``invalid`` (a remove, a batch without ``op``, no such op) or ``empty`` text.
        """
        if not self.text.strip():
            raise Refused("the edited text is empty: reject the pending write instead", code="empty")
        payload = json.loads(json.dumps(rec.payload))
        op = self._op_of(payload)
        op["content"] = self.text
        op.pop("new_text", None)
        return payload

    def journal_fields(self, rec: PendingWrite) -> dict[str, Any]:
        """What the journal (and History) keeps about the edit: both texts."""
        return {"edited": True, "staged_text": self.staged_text(rec), "applied_text": self.text,
                **({"edited_op": self.op} if self.op is not None else {})}


def _find(home: HermesHome, pending_id: str) -> PendingWrite:
    pid = (pending_id or "").strip()
    if not _ID_RE.match(pid):
        raise Refused(f"invalid pending id {pending_id!r}", code="invalid")
    path = home.pending_dir / f"{pid}.json"
    if not path.is_file():
        raise Refused(f"no pending memory write with id '{pid}'", code="not_found")
    return load_record(path)


def approve(home: HermesHome, config: Config | None, pending_id: str, actor: str = "cli", *,
            strict: bool = False, edited: Edit | None = None, bulk: str | None = None,
            origin: dict[str, Any] | None = None) -> Any:
    """Apply a pending write through the core, then remove its record.

    Args:
        strict: a replay that would change nothing is refused (``stale``, the record kept) instead
            of done: what a bulk approval asks, so that a record that turned into a no-op after it
            was listed is counted as refused, not applied.
        edited: the reviewer's text in place of the staged one (:class:`Edit`, Hermes PR #44966's
            edit before approve): the record's payload with that op's ``content`` replaced is
            applied, and the journal keeps both texts (``staged_text``, ``applied_text``).
        bulk: the id of the bulk action this approval is part of (kept in the journal row).
        origin: where the decision came from (a chat: ``{"platform", "chat_id", "user_id", ...}``),
            kept as the journal row's ``detail["origin"]``.

    Returns the ``WriteResult`` of the replay.

    Raises:
        Refused: ``not_found``/``invalid`` (id), ``malformed`` (the record cannot be applied),
            or any refusal of the replay (``threat``, ``overflow``, ``no_match``, ``ambiguous``,
            ``drift``, ``unreadable``); ``foreign`` (staged by a memory provider or another
            subsystem: never applied); ``stale`` in ``strict`` mode for a no-op; ``busy`` when
            another process is approving or rejecting the same record; ``already_applied`` (the journal holds a ``done`` approval of these
            bytes: the leftover record is removed) or ``maybe_applied`` (an ``unknown`` one: kept,
            never replayed). The record is kept in every other refusal.
    """
    from .store import MemoryStore, recover_intents  # lazy: memory -> journal -> ...

    rec = _find(home, pending_id)
    if rec.malformed:
        raise Refused(f"pending write {rec.id} is malformed: {rec.malformed}", code="malformed")
    if rec.staged_by is not None:
        raise Refused(f"pending write {rec.id} was staged by {rec.staged_by}, not by Hermes' memory tool: memdeck never "
                      "applies it to MEMORY.md/USER.md (it belongs to whoever staged it; reject it if it is unwanted)",
                      code="foreign", staged_by=rec.staged_by)
    payload = rec.payload if edited is None else edited.payload_of(rec)
    with _claimed(rec):
        store = MemoryStore(home, config or load_config(home), actor=actor)
        # an approval killed between its write and its journal COMMIT left an intent: resolve it
        # first, so "already applied" below is decided on what is on disk
        recover_intents(home, store.config)
        _recover_rejects(home)
        try:  # the journal keeps the record, so an undo of the approval can stage it again
            raw = read_regular_bytes(rec.path).decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise Refused(f"pending write {rec.id} cannot be read now ({exc}); nothing was applied",
                          code="unreadable") from None
        # At most once (issue 22): a record whose id and sha256 match an approval the journal
        # holds (done, or unknown: it may have happened) is never replayed, whatever the memory
        # file holds now -- a substring replay on a file other writers changed could hit
        # another entry.
        prior = _prior_approval(home, rec.id, raw)
        if prior is not None and prior.state == "done":
            _remove_record(rec)
            raise Refused(f"pending write {rec.id} was already applied (journal #{prior.journal_id}); its record was "
                          "left behind by an interrupted approval and is removed now. Nothing was applied again.",
                          code="already_applied", journal_id=prior.journal_id)
        if prior is not None:
            why = (prior.detail.get("recovery") or {}).get("reason") if isinstance(prior.detail.get("recovery"), dict) else None
            raise Refused(f"pending write {rec.id} may already have been applied: journal #{prior.journal_id} could not "
                          f"be settled ({why or 'unknown'}). It is not applied again; reject it, or make the change by "
                          "hand.", code="maybe_applied", journal_id=prior.journal_id)
        # The record must be removable once applied, or a later approval would replay it (issue 13 #7).
        if not os.access(rec.path.parent, os.W_OK):
            raise Refused(f"{rec.path.parent} is read-only: the record could not be removed after the write, so "
                          "nothing was applied (make the directory writable, then approve again)", code="unwritable")
        # the store sets the record aside before the file changes and removes it once the
        # write is done (core/memory/approval.py: the crash windows)
        store.claim = RecordClaim(home.pending_dir, rec.path.name, rec.id, raw, rec.origin)
        store.journal_extra = store.claim.journal_fields()
        if edited is not None:
            store.journal_extra.update(edited.journal_fields(rec))
        if bulk is not None:
            store.journal_extra["bulk"] = bulk
        if origin:
            store.journal_extra["origin"] = dict(origin)
        p = payload
        target = str(p.get("target") or "memory")

        if staged.is_pinned(p):  # staged by Hermes 0.21.5 / 0.22: patch / matched_entry semantics
            result = store.replay_pinned(p)
        elif p.get("action") == "batch":
            result = store.apply_batch(target, p.get("operations") or [])
        else:
            result = store.hermes_single(str(p.get("action")), target, str(p.get("content") or ""), str(p.get("old_text") or ""))
        if not result.changed:  # nothing to write (e.g. the entry exists): done, as Hermes does
            if strict:
                raise Refused(f"pending write {rec.id} would change nothing now ({result.message.rstrip('.')}): it no "
                              "longer applies. Nothing was written; the record is kept (reject it).", code="stale",
                              noop=True)
            try:
                _remove_record(rec)
            except OSError as exc:
                # nothing was written: reporting a failure now would be untrue, and the record
                # left behind applies nothing the next time either
                if isinstance(result, WriteResult):
                    result.details["warning"] = (f"nothing to apply, but its record could not be removed "
                                                 f"({exc.strerror or exc})")
    return result


def _recover_rejects(home: HermesHome) -> int:
    """Resolve ``reject`` rows left in ``intent`` by a killed reject (see
    :func:`.store.resolve_reject_intents`)."""
    from .store import resolve_reject_intents  # lazy, as in approve

    if not journal.db_exists(home):
        return 0
    with deckdb.opened(home) as conn:
        return resolve_reject_intents(home, conn)


def _remove_record(rec: PendingWrite) -> None:
    try:
        rec.path.unlink()
    except FileNotFoundError:
        pass


def _prior_approval(home: HermesHome, pending_id: str, raw: str) -> journal.JournalRow | None:
    """An earlier approval of exactly this record (same id, same sha256), ``done`` or
    ``unknown`` and not undone (:func:`.approval.applied_row`), or None."""
    if not journal.db_exists(home):
        return None
    with deckdb.opened(home) as conn:
        return approval.applied_row(conn, pending_id, raw)


@contextlib.contextmanager
def _claimed(rec: PendingWrite) -> Iterator[None]:
    """Hold an exclusive, non-blocking flock on the record itself while it is approved or
    rejected, so two reviewers (two memdeck windows, CLI + TUI) never replay it twice.

    The lock dies with the process (no claim file is left behind by a crash). A record that
    another reviewer removed while we waited for the open is refused as already handled.

    Raises:
        Refused: ``busy`` (another process is handling it) or ``not_found`` (already handled).
    """
    try:
        fd = os.open(rec.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise Refused(f"pending write {rec.id} was already handled", code="not_found") from None
    except OSError as exc:
        raise Refused(f"pending write {rec.id} cannot be opened: {exc.strerror}", code="unreadable") from None
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                raise Refused(f"pending write {rec.id} is being handled by another process; nothing was done",
                              code="busy") from None
        if os.fstat(fd).st_nlink == 0:
            raise Refused(f"pending write {rec.id} was already handled", code="not_found")
        yield
    finally:
        os.close(fd)


def reject(home: HermesHome, pending_id: str, actor: str = "cli", *, bulk: str | None = None,
           origin: dict[str, Any] | None = None) -> dict[str, Any]:
    """Discard a pending write (its record file is removed; the journal keeps a copy, so
    :func:`unreject` / ``memdeck undo`` can stage it again). ``bulk``: the id of the bulk action
    it is part of (kept in the journal row); ``origin``: where the decision came from (kept as
    ``detail["origin"]``, as :func:`approve`).

    Returns ``{"id", "action", "target", "journal_id"}``.

    Raises:
        Refused: ``not_found``/``invalid`` id.
    """
    rec = _find(home, pending_id)
    target = rec.target if rec.target in TARGETS else "memory"
    with _claimed(rec):
        try:
            raw_bytes = read_regular_bytes(rec.path)
        except OSError:
            raw_bytes = b""
        raw = raw_bytes.decode("utf-8", errors="replace")
        _recover_rejects(home)
        # write-ahead: the row (intent), the removal, then done; a kill in between is resolved
        # by the next approve/reject (:func:`_recover_rejects`)
        jid = journal.record(home, actor=actor, op="reject", kind="memory", target=target, before=None, after=None,
                             detail={"pending_id": rec.id, "record": raw, "action": rec.action,
                                     "record_file": rec.path.name, **({"bulk": bulk} if bulk else {}),
                                     **({"origin": dict(origin)} if origin else {})},
                             state="intent")
        try:
            rec.path.unlink()
        except FileNotFoundError:
            pass
        except BaseException:
            _recover_rejects(home)
            raise
        try:
            with deckdb.opened(home) as conn, deckdb.transaction(conn):
                journal.mark_done(conn, [jid])
        except BaseException:
            # the journal cannot say done (a full disk): put the record back, so a failure means
            # the write is still pending; if that fails too, the intent row (holding the record)
            # is resolved by the next approve/reject
            with contextlib.suppress(Exception):
                atomic_write_bytes(rec.path, raw_bytes, prefix=".pending_", suffix=".tmp")
                _recover_rejects(home)
            raise
    return {"id": rec.id, "action": rec.action, "target": target, "journal_id": jid,
            "message": f"Rejected pending write {rec.id}."}


def unreject(home: HermesHome, journal_id: int | None = None, *, pending_id: str | None = None,
             actor: str = "cli") -> dict[str, Any]:
    """Stage a rejected record again from the journal's copy of it (the undo of :func:`reject`),
    and journal that (an ``undo`` row; the reject row is marked undone by it).

    Args:
        journal_id: the ``reject`` row; or ``pending_id``: the newest reject of that record not undone.

    Returns ``{"id", "journal_id", "undid", "message"}``.

    Raises:
        Refused: ``not_found`` (no such reject, or already undone), ``conflict`` (a record of
            that name is staged now), ``unwritable`` (it could not be written).
    """
    if not journal.db_exists(home):
        raise Refused("nothing to stage again: memdeck's journal is empty", code="not_found")
    with deckdb.opened(home) as conn:
        if journal_id is not None:
            row = journal.get(home, int(journal_id), conn=conn)
        else:
            r = conn.execute("SELECT * FROM journal WHERE op = 'reject' AND state = 'done' AND undone_by IS NULL AND "
                             "json_valid(detail) AND json_extract(detail, '$.pending_id') = ? ORDER BY journal_id DESC "
                             "LIMIT 1", (pending_id,)).fetchone()
            row = journal.row_of(r) if r is not None else None
    what = f"journal #{journal_id}" if journal_id is not None else f"pending write {pending_id}"
    if row is None or row.op != "reject" or row.state != "done" or row.undone_by is not None:
        raise Refused(f"{what} is not a reject that can be undone (none, or already undone)", code="not_found")
    d = row.detail
    name = str(d.get("record_file") or f"{d.get('pending_id')}.json")
    if not isinstance(d.get("record"), str) or not d.get("record"):
        raise Refused(f"journal #{row.journal_id} keeps no copy of the record: it cannot be staged again",
                      code="not_found")
    if (home.pending_dir / name).exists():
        raise Refused(f"a pending write named {name} is staged already: nothing was done", code="conflict")
    pid = approval.restage(home, {**d, "record_file": name})
    if pid is None or not (home.pending_dir / name).exists():
        raise Refused(f"the record {name} could not be written back to {home.pending_dir}", code="unwritable")
    with deckdb.opened(home) as conn, deckdb.transaction(conn):
        jid = journal.record(home, actor=actor, op="undo", kind="memory", target=row.target, before=None, after=None,
                             detail={"undoes": [row.journal_id], "pending_id": pid, "restaged": name}, conn=conn)
        journal.mark_undone(conn, [row.journal_id], jid)
    return {"id": pid, "journal_id": jid, "undid": row.journal_id,
            "message": f"Staged pending write {pid} again (undid the reject, journal #{row.journal_id})."}
