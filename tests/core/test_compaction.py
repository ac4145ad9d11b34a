"""Compaction markers: Hermes' prefixes, the merge-into-tail shape, MemLock's split rule."""

from __future__ import annotations

import json

from memdeck.core.sessions.compaction import (
    LEGACY_SUMMARY_PREFIX,
    MERGED_PRIOR_CONTEXT_HEADER,
    MERGED_SUMMARY_DELIMITER,
    SUMMARY_END_MARKER,
    SUMMARY_LEAD,
    SUMMARY_PREFIX_0_19,
    decode_content,
    find_summary,
    hash_summary_body,
    match_summary,
    message_text,
    split_context,
)


def test_prefix_literal_facts() -> None:
    assert len(SUMMARY_PREFIX_0_19) == 1632
    assert SUMMARY_PREFIX_0_19.startswith(SUMMARY_LEAD)


def test_current_prefix_body_is_text_after_full_prefix() -> None:
    m = match_summary(SUMMARY_PREFIX_0_19 + "\n## Goal\nship it\n" + SUMMARY_END_MARKER)
    assert m is not None and m.kind == "current" and not m.merged
    assert m.body.startswith("## Goal") and m.body_hash == hash_summary_body(m.body)


def test_lead_only_and_legacy() -> None:
    assert match_summary(SUMMARY_LEAD + " short body").body == "short body"
    m = match_summary(LEGACY_SUMMARY_PREFIX + " old style")
    assert m.kind == "legacy" and m.body == "old style"
    assert match_summary("hello [CONTEXT SUMMARY]: not at start") is None
    assert match_summary("") is None


def test_merge_into_tail_is_detected_but_not_by_memlock_rule() -> None:
    text = f"{MERGED_PRIOR_CONTEXT_HEADER}\nold tail text\n{MERGED_SUMMARY_DELIMITER}\n{SUMMARY_PREFIX_0_19} the body"
    m = match_summary(text)
    assert m is not None and m.merged and m.body == "the body"
    assert match_summary(text, detect_merged=False) is None


def test_find_summary_first_match_and_split() -> None:
    msgs = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": SUMMARY_LEAD + " one"},
        {"role": "user", "content": SUMMARY_LEAD + " two"},
        {"role": "user", "content": "now"},
    ]
    idx, m = find_summary(msgs)
    assert idx == 2 and m.body == "one"
    summary, active = split_context(msgs, idx)
    assert [x["content"] for x in summary] == ["a", SUMMARY_LEAD + " one"]
    assert [x["content"] for x in active] == ["sys", SUMMARY_LEAD + " two", "now"]
    assert split_context(msgs, None) == ([], msgs)
    assert find_summary([{"role": "user", "content": "x"}]) == (None, None)


def test_message_text_shapes() -> None:
    parts = [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {}}, {"type": "text", "text": "b"}]
    assert message_text({"content": parts}) == "a\nb"
    assert message_text({"content": "\x00json:" + json.dumps(parts)}) == "a\nb"
    assert message_text({"content": None}) == ""
    assert decode_content("\x00json:{broken") == "\x00json:{broken"


def test_hermes_prefixes_are_used_only_when_already_loaded(monkeypatch) -> None:
    import sys
    import types

    from memdeck.core.sessions import compaction

    fake = types.ModuleType("agent.context_compressor")
    fake.SUMMARY_PREFIX = "[CONTEXT COMPACTION — REFERENCE ONLY] NEWER PREFIX:"
    fake.LEGACY_SUMMARY_PREFIX = LEGACY_SUMMARY_PREFIX
    fake._HISTORICAL_SUMMARY_PREFIXES = ("[CONTEXT COMPACTION — REFERENCE ONLY] OLD:",)
    compaction.known_prefixes.cache_clear()
    monkeypatch.setitem(sys.modules, "agent.context_compressor", fake)
    try:
        m = match_summary(fake.SUMMARY_PREFIX + " body")
        assert m.prefix == fake.SUMMARY_PREFIX and m.body == "body"
        assert match_summary("[CONTEXT COMPACTION — REFERENCE ONLY] OLD: x").kind == "historical"
        # the frozen 0.19 prefix is still recognised as historical
        assert match_summary(SUMMARY_PREFIX_0_19 + " b").body == "b"
    finally:
        monkeypatch.delitem(sys.modules, "agent.context_compressor")
        compaction.known_prefixes.cache_clear()
    assert match_summary(SUMMARY_PREFIX_0_19 + " b").kind == "current"
