"""The prune-vs-compaction rule (issue 29): ``core.sessions.compaction.history_reinsert_start``.

Hermes' proactive tool-result prune (0.20 opt-in, 0.23 on by default) archives every live row and
inserts the history again, row for row, with the same role and timestamp and the same content
except tool results, and no summary row. Those archived rows belong to no compaction: the next
compaction's batch starts where the last such re-insert starts. The real shape is checked on
Hermes 0.22.2.post1's SessionDB in tests/interop/test_hermes_0_23.py; here the rule itself.
Rows are ``(id, role, content, active, compacted, timestamp)`` as the compaction reader reads them.
"""

from __future__ import annotations

from memdeck.core.sessions.compaction import history_reinsert_start


def _gen(start_id: int, spec: list[tuple[str, str, float]], active: int, compacted: int) -> list[tuple]:
    return [(start_id + i, role, content, active, compacted, ts) for i, (role, content, ts) in enumerate(spec)]


HISTORY = [("user", "read the log", 1.0), ("assistant", "", 2.0), ("tool", "LOG " * 500, 3.0), ("assistant", "done", 4.0)]
PRUNED = [("user", "read the log", 1.0), ("assistant", "", 2.0), ("tool", "[read_file] 2,000 chars", 3.0),
          ("assistant", "done", 4.0)]


def test_no_reinsert_in_plain_archived_rows() -> None:
    rows = _gen(1, HISTORY, 0, 1)
    assert history_reinsert_start(rows, 0, len(rows)) == 0


def test_a_reinsert_starts_the_next_generation() -> None:
    rows = _gen(1, HISTORY, 0, 1) + _gen(5, PRUNED + [("user", "next", 5.0)], 0, 1)
    assert history_reinsert_start(rows, 0, len(rows)) == 4
    # a prune of a prune: the last re-insert wins
    rows = _gen(1, HISTORY, 0, 1) + _gen(5, PRUNED, 0, 1) + _gen(9, PRUNED + [("user", "next", 5.0)], 0, 1)
    assert history_reinsert_start(rows, 0, len(rows)) == 8


def test_the_copy_must_fit_and_mirror_every_row() -> None:
    rows = _gen(1, HISTORY, 0, 1) + _gen(5, PRUNED[:3], 0, 1)  # cut short: not a whole re-insert
    assert history_reinsert_start(rows, 0, len(rows)) == 0
    changed = [PRUNED[0], PRUNED[1], PRUNED[2], ("assistant", "done, differently", 4.0)]  # non-tool text differs
    rows = _gen(1, HISTORY, 0, 1) + _gen(5, changed, 0, 1)
    assert history_reinsert_start(rows, 0, len(rows)) == 0


def test_the_same_words_said_again_later_are_no_reinsert() -> None:
    again = [(r, c, ts + 100.0) for r, c, ts in HISTORY]  # same messages, new timestamps
    rows = _gen(1, HISTORY, 0, 1) + _gen(5, again, 0, 1)
    assert history_reinsert_start(rows, 0, len(rows)) == 0


def test_only_archived_rows_can_have_been_reinserted() -> None:
    rows = _gen(1, HISTORY, 0, 0) + _gen(5, PRUNED, 0, 1)  # rewound (not compacted) rows
    assert history_reinsert_start(rows, 0, len(rows)) == 0


def test_a_compactions_head_and_summary_are_no_reinsert() -> None:
    summary = ("assistant", "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted into the summary below.", 9.0)
    rows = _gen(1, HISTORY, 0, 1) + _gen(5, [HISTORY[0], summary, HISTORY[3]], 1, 0)
    assert history_reinsert_start(rows, 0, 4) == 0
