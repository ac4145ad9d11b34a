"""``/memdeck``'s chat answers (issue 35 #1): paging under a platform's limit, plain text."""

from __future__ import annotations

from memdeck.core.plugin.chat_command import DEFAULT_LIMIT, LIMITS, _clip, paged, run


def test_a_long_answer_is_cut_between_records_with_the_next_page_named() -> None:
    blocks = [f"rec{n:02d} add memory - 2 h old - clean\n  text: " + "x" * 150 for n in range(40)]
    first = paged("40 pending memory writes (40 clean)", blocks, 1, LIMITS["discord"], "pending")
    assert len(first) <= LIMITS["discord"] == 1900
    shown = [b for b in blocks if b in first]
    assert shown == blocks[: len(shown)] and 0 < len(shown) < 40
    assert first.endswith(f"... {40 - len(shown)} more: /memdeck pending 2")
    seen: list[str] = []
    page = 1
    while True:
        text = paged("head", blocks, page, LIMITS["discord"], "pending")
        assert len(text) <= LIMITS["discord"]
        seen += [b for b in blocks if b in text]
        if "more: /memdeck pending" not in text:
            break
        page += 1
    assert seen == blocks  # every record on exactly one page, in order


def test_one_block_over_the_limit_is_cut_and_text_is_one_plain_line() -> None:
    text = paged("head", ["y" * 5000], 1, DEFAULT_LIMIT, "memory")
    assert len(text) <= DEFAULT_LIMIT and "more:" not in text
    assert _clip("old: a\nnew: \x1b]52;c;b\x07", 80) == "old: a | new: ⟨ESC⟩]52;c;b⟨BEL⟩"


def test_bad_input_is_one_line_not_a_traceback(tmp_path) -> None:
    from memdeck.core.home import HermesHome

    home = HermesHome(tmp_path)
    (tmp_path / "memories").mkdir()
    assert run(home, "frobnicate", None).startswith("memdeck: unknown sub-command 'frobnicate'")
    assert run(home, "pending x", None) == "memdeck: refused: not a page number: x"
    assert run(home, "approve", None) == "usage: /memdeck approve ID | /memdeck approve --all-clean"
    assert run(home, "approve nope", None).startswith("memdeck: refused: ")
    assert run(home, "pending", None) == "No memory writes wait for review."


def test_revert_a_change_of_the_history_named_by_history(tmp_path) -> None:
    """``/memdeck revert CHANGE_ID``: the change id ``/memdeck history`` shows, reverted through the
    core of ``memdeck revert``, journaled with where it came from; ``memdeck undo`` puts it back."""
    from memdeck.core.config import load_config
    from memdeck.core.deck import journal
    from memdeck.core.home import HermesHome
    from memdeck.core.memory.store import MemoryStore
    from memdeck.core.undo import undo

    home = HermesHome(tmp_path)
    (tmp_path / "memories").mkdir()
    (tmp_path / "memories" / "MEMORY.md").write_text("fact one", encoding="utf-8")
    assert run(home, "history", None) == "No memory changes in memdeck's journal."  # the history's first look
    MemoryStore(home, load_config(home), actor="cli").add("memory", "fact two")
    hist = run(home, "history", None).splitlines()
    assert hist[0] == "last 1 memory change, newest first" and " - change " in hist[1], hist
    cid = hist[1].rsplit(" - change ", 1)[1]
    assert run(home, "revert", None).startswith("usage: /memdeck revert CHANGE_ID")
    assert run(home, "revert 99999", None).startswith("memdeck: refused: no change #99999")
    out = run(home, f"revert {cid}", None)
    assert out.startswith(f"Reverted change #{cid} (added) in memory.") and "memdeck undo reverts it" in out
    assert (tmp_path / "memories" / "MEMORY.md").read_text(encoding="utf-8") == "fact one"
    row = journal.entries(home, limit=1)[0]
    assert (row.op, row.actor, row.detail["origin"]) == ("revert", "chat", {"platform": "cli"})
    assert run(home, f"revert {cid}", None).startswith(f"memdeck: refused: change #{cid} was already reverted")
    undo(home, load_config(home), actor="test")
    assert "fact two" in (tmp_path / "memories" / "MEMORY.md").read_text(encoding="utf-8")


def test_stale_lists_the_sessions_whose_frozen_memory_differs(tmp_path) -> None:
    """``/memdeck stale``: the rows of ``memdeck sessions --stale`` (one core), as chat lines."""
    from memdeck.core.home import HermesHome
    from memdeck.core.memory.prompt_block import render_block
    from memdeck.core.sessions import hermes_schema as hs

    home = HermesHome(tmp_path)
    (tmp_path / "memories").mkdir()
    assert run(home, "stale", None) == "No state.db in this home: no sessions to compare."
    (tmp_path / "memories" / "MEMORY.md").write_text("fact one\n§\nfact two", encoding="utf-8")
    prompt = "\n\n".join(["You are Hermes.", render_block("memory", ["fact one", "fact zero"], 2200), "Model: m"])
    same = "\n\n".join(["You are Hermes.", render_block("memory", ["fact one", "fact two"], 2200), "Model: m"])
    conn = hs.create_state_db(home.state_db)
    hs.add_session(conn, "S1", source="telegram", started_at=1000.0, model="m", system_prompt=prompt)
    hs.append_message(conn, "S1", "user", "hello", timestamp=1010.0)
    hs.add_session(conn, "S2", source="cli", started_at=900.0, model="m", system_prompt=same)
    hs.append_message(conn, "S2", "user", "hi", timestamp=1005.0)
    conn.close()
    out = run(home, "stale", None).splitlines()
    assert out[0] == "1 of 2 open sessions sees memory that differs from MEMORY.md/USER.md", out
    assert out[1].startswith("S1 (telegram) - 1 difference - frozen ") and "S2" not in "\n".join(out)
    assert any(ln.startswith("  new session: ") and "Telegram" in ln for ln in out)
    assert "\x1b" not in "\n".join(out)
