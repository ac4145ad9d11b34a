"""What the store's operation mixins need from the store: its plumbing, declared for the type checker.

:class:`~.store.MemoryStore` is composed of :class:`~.archiving.ArchiveOps`,
:class:`~.replay.ReplayOps`, :class:`~.reverting.RevertOps`, :class:`~.recovery.RecoveryOps` and
:class:`~.consolidating.ConsolidateOps`;
each calls the store's locking, loading, write-ahead and result helpers. :class:`StorePlumbing`
declares those attributes and methods (their implementations are in ``store.py``,
``_restage_approved`` in ``reverting.py`` and ``_recover_locked`` in ``archiving.py``), so mypy checks every call a mixin makes. At run time
the class is empty: the declarations exist only for the type checker.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Callable, Sequence
    from contextlib import AbstractContextManager
    from pathlib import Path
    from typing import Any

    from ..config import Config
    from ..deck.journal import JournalRow
    from ..home import HermesHome
    from .results import PlannedWrite, WriteResult


class StorePlumbing:
    """The store's attributes and helpers a mixin may use (see the module docstring)."""

    if TYPE_CHECKING:
        home: HermesHome
        config: Config
        actor: str

        def path(self, target: str) -> Path: ...
        def limit(self, target: str) -> int: ...
        def _locked(self, *targets: str) -> AbstractContextManager[None]: ...
        def _load(self, target: str, *, canonical_check: bool = True) -> tuple[str | None, list[str]]: ...
        @staticmethod
        def _backup(path: Path) -> str: ...
        def _write_text(self, target: str, text: str) -> None: ...
        def _write_ahead(self, conn: sqlite3.Connection, plans: Sequence[PlannedWrite], *, txn: str | None = None,
                         on_intent: Callable[[Any], dict[str, Any] | None] | None = None,
                         on_done: Callable[[Any, list[int]], object] | None = None,
                         after_files: Callable[[], AbstractContextManager[Any]] | None = None) -> list[int]: ...
        def _cleanup_temps(self, held: Sequence[str]) -> None: ...
        def _result(self, op: str, target: str, entries: Sequence[str], message: str, **kw: Any) -> WriteResult: ...
        def _commit(self, op: str, target: str, raw: str | None, old: list[str], new: list[str], message: str,
                    detail: dict[str, Any], entry: str | None = None) -> WriteResult: ...
        def _wal_write(self, target: str, raw: str | None, after: str, op: str, detail: dict[str, Any]) -> int: ...
        @staticmethod
        def _clean(text: str | None, what: str) -> str: ...
        def _locate(self, selector: str, target: str | None) -> str: ...
        def add(self, target: str, text: str) -> WriteResult: ...
        def _replace_at(self, target: str, raw: str | None, entries: list[str], i: int, content: str, op: str,
                        message: str) -> WriteResult: ...
        def _restage_approved(self, rows: Sequence[JournalRow]) -> str | None: ...
        def _recover_locked(self, target: str, conn: sqlite3.Connection) -> int: ...
