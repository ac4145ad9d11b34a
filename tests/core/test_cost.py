"""Issue 37, pure: turns from recorded requests, the cache breaks and their reasons, the tiers per
version, and a memory write's estimate under each cache kind."""

from __future__ import annotations

from memdeck.core.context.cost import cache_kind, group_turns, with_change, write_estimate
from memdeck.core.context.sections import split_prompt
from memdeck.core.context.tiers import tiers_for
from memdeck.core.deck.usage import ApiUsage
from memdeck.core.hermes_version import HermesVersion

SEP = "═" * 46


def req(turn: str | None, call: int, read: int, write: int, inp: int = 10, msgs: int = 3, at: float = 100.0,
        sid: str = "S", sha: str | None = None, tools: int | None = None) -> ApiUsage:
    return ApiUsage(sid, turn, None, call, "m", "custom", "chat_completions", "cli", msgs, inp, 5, read, write, 0, at,
                    sha, tools)


def test_turns_group_by_turn_id_and_each_break_says_why() -> None:
    rows = [req("t1", 1, 0, 2000), req("t1", 2, 2010, 30, msgs=5, at=101),  # a tool call inside turn 1
            req("t2", 1, 2045, 20, msgs=7, at=110),
            req("t3", 1, 300, 1500, msgs=4, at=120),  # fewer messages: a compaction rebuilt the prompt
            req("t4", 1, 10, 1800, msgs=6, at=900)]  # 13 min later
    turns = group_turns(rows)
    assert [len(t.requests) for t in turns] == [2, 1, 1, 1]
    assert [t.cache_break.reason if t.cache_break else None for t in turns] == [
        "new session", None, "compaction", "cache expired"]
    assert turns[0].total("cache_write_tokens") == 2030 and turns[1].hit_ratio == round(2045 / 2075, 3)
    # what pre_api_request saw: the system message's hash, the tool count
    seen = [req("t1", 1, 0, 2000, sha="aa", tools=30), req("t2", 1, 500, 1600, msgs=5, sha="bb", tools=30, at=110),
            req("t3", 1, 700, 1500, msgs=7, sha="bb", tools=31, at=120)]
    assert [t.cache_break.reason if t.cache_break else None for t in group_turns(seen)] == [
        "new session", "rebuilt prompt", "tool list change"]
    # no turn id (an older Hermes): a request with api_call_count 1 opens a turn
    assert len(group_turns([req(None, 1, 0, 50), req(None, 2, 60, 5), req(None, 1, 70, 5)])) == 2
    # a new session whose prefix the provider kept from another session still wrote its own part
    before = req("x", 1, 1900, 10, sid="OTHER")
    (t,) = group_turns([req("b1", 1, 1900, 120)], before=before)
    assert t.cache_break is not None and t.cache_break.reason == "new session"
    # rows continuing a session recorded earlier: the first is compared with nothing, not a new session
    assert group_turns([req("t9", 1, 2000, 10)], continues=True)[0].cache_break is None


def test_tiers_per_version() -> None:
    old, v19, v20, v22 = (tiers_for(HermesVersion.of(x)) for x in ("0.16", "0.19", "0.20.1", "0.22.2"))
    assert not old.known and "no tiers known" in old.reason
    assert v19.tier("skills") == "stable" and v19.tier("memory") == "volatile" and not v19.static_prefix
    assert v20.tier("skills") == "volatile" and v20.tier("environment") == "stable" and v20.static_prefix
    assert v22.tier("environment") == "volatile" and v22.tier("context_files") == "context"


def _prompt() -> str:
    mem = f"{SEP}\nMEMORY (your personal notes) [5% — 110/2,200 chars]\n{SEP}\n" + "x" * 110
    return ("You are Hermes Agent, an intelligent AI assistant. " + "g" * 3950 + "\n\n# Project Context\n\n" + "c" * 2000
            + "\n\n" + mem + "\n\nConversation started: Monday")


def test_a_memory_write_costs_what_the_cache_kind_and_version_rewrite() -> None:
    prompt = _prompt()
    lay = split_prompt(prompt)
    mem_at = prompt.index("[5%")
    implicit = write_estimate(prompt, lay, HermesVersion.of("0.19"))
    assert implicit["tier"] == "volatile" and implicit["when"] == "next session"
    assert implicit["tokens"] == (len(prompt) - mem_at + 3) // 4
    assert "cost the same as one" in implicit["batching"]
    whole = write_estimate(prompt, lay, HermesVersion.of("0.19"), kind="explicit")
    assert whole["tokens"] == (len(prompt) + 3) // 4 and "whole system prompt" in whole["rule"]
    later = write_estimate(prompt, lay, HermesVersion.of("0.22.2"), kind="explicit")
    ctx_at = prompt.index("# Project Context")
    assert later["tokens"] == (len(prompt) - ctx_at + 3) // 4 and "stable tier keeps" in later["rule"]
    assert with_change(implicit, 80)["tokens"] == implicit["tokens"] + 20
    assert write_estimate("", None, HermesVersion.of("0.19"))["tokens"] is None
    assert cache_kind("anthropic/claude-sonnet-4") == "explicit" and cache_kind("gpt-5", "openai") == "implicit"


def test_the_hook_records_each_request_once_and_never_raises_into_the_turn(tmp_path) -> None:
    from memdeck.core.deck import usage
    from memdeck.core.home import HermesHome
    from memdeck.core.plugin.usage_hook import UsageRecorder

    (tmp_path / "h" / "memories").mkdir(parents=True)
    home = HermesHome(tmp_path / "h")
    rec = UsageRecorder(home)
    system = [{"role": "system", "content": "You are Hermes Agent."}, {"role": "user", "content": "hi"}]
    rec.pre(session_id="S", api_request_id="r1", request_messages=system, tool_count=12)
    rec(session_id="S", api_request_id="r1", turn_id="t1", api_call_count=1, ended_at=5.0,
        usage={"input_tokens": 3, "output_tokens": 4, "cache_read_tokens": 100, "cache_write_tokens": 7})
    rec(session_id="S", api_request_id="r2", usage=None)  # a response without usage: nothing
    (row,) = usage.load_session(home, "S")
    assert (row.prompt_sha, row.tool_count, row.cache_read_tokens, row.cache_write_tokens) == (
        __import__("hashlib").sha256(b"You are Hermes Agent.").hexdigest()[:16], 12, 100, 7)
    assert (rec.written, rec.skipped) == (1, 1)
    # memdeck.db unusable: the hook says so in the log and returns; the turn goes on
    other = UsageRecorder(HermesHome(tmp_path / "bad"))
    (tmp_path / "bad" / "memdeck").mkdir(parents=True)
    (tmp_path / "bad" / "memdeck" / "memdeck.db").write_bytes(b"not a database" * 100)
    assert other(session_id="S", api_request_id="r1", usage={"input_tokens": 1}) is None
    assert (other.written, other.skipped) == (0, 1)
