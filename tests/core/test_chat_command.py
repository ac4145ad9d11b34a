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
