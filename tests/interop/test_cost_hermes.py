"""Issue 37 against the real Hermes: what the prompt costs, per request, as the provider reported it.

The real ``AIAgent.run_conversation`` of each Hermes (its own venv, ``tests/interop/matrix/driver.py``
``live_turns`` with ``base_url``) talks to the OpenAI-compatible server below, on a loopback port in
this process. The server plays a provider with an implicit prefix cache (as OpenAI's and DeepSeek's):
a request (the tool schemas, the system message, each message) is cached as it is sent; the longest
prefix any earlier request shares with it is a cache read (in whole 4-char tokens), the rest but the
last message is a cache write, the last message is uncached input. Its responses report that usage in the OpenAI shape
(``prompt_tokens_details.cached_tokens``) on odd requests and the Anthropic shape
(``cache_read_input_tokens``) on even ones, ``cache_creation_input_tokens`` on both, as proxies do;
Hermes normalises both (``agent/usage_pricing.py`` ``normalize_usage``), memdeck's plugin records
what its ``post_api_request`` hook receives, and ``memdeck context --json`` shows it per turn.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from memdeck.core.context.cost import with_change
from memdeck.core.home import HermesHome
from memdeck.core.plugin.install import install_plugin
from tests.interop.matrix import run
from tests.interop.matrix.run import hermes_or_skip
from tests.interop.matrix.venvs import SPECS, versions_to_run

pytestmark = pytest.mark.interop

VERSIONS = versions_to_run(("0.19.0", "0.22.2.post1"))  # every version with MEMDECK_INTEROP_FULL=1
DRIVER = str(run.DRIVER)
MEMORY = ["Project linkhop lives in ~/code/linkhop; `make test` runs the suite.",
          "Deploys go through staging first; production deploys on Fridays at 5pm.",
          "Logging is structlog: JSON in production, pretty console locally."]
USER = ["Name: Ada Lovelace. Works from London."]
NEW_RULE = "Release notes are written in British English and list every migration by number."


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    lo, hi = 0, n  # binary search on the longest equal prefix (slices compare at C speed)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def tokens(text: str) -> int:
    """The server's tokenizer: 4 chars a token, rounded up."""
    return (len(text) + 3) // 4


class CachingModel:
    """An OpenAI-compatible chat-completions server with a prefix cache (module docstring). ``log``
    holds, per request: ``agent`` (the request carries tool schemas: the agent's own turn, not an
    auxiliary call such as 0.21.5+'s title), ``system`` (the system message's text) and what the
    response reported, already in Hermes' buckets (``input``: uncached, ``read``, ``write``, ``output``)."""

    def __init__(self) -> None:
        self.cache: set[str] = set()  # every request's text: the provider's cached prefixes
        self.log: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        model = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, body: bytes, ctype: str = "application/json") -> None:
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                self._send(json.dumps({"object": "list", "data": [{"id": "test-model", "object": "model"}]}).encode())

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                req = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                usage = model.usage(req)
                choice = {"index": 0, "message": {"role": "assistant", "content": "Noted."}, "finish_reason": "stop"}
                if not req.get("stream"):
                    self._send(json.dumps({"id": "c1", "object": "chat.completion", "created": 1, "model": "test-model",
                                           "choices": [choice], "usage": usage}).encode())
                    return
                chunks = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Noted."},
                                        "finish_reason": None}]},
                          {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": usage}]
                body = b"".join(b"data: " + json.dumps({"id": "c1", "object": "chat.completion.chunk", "created": 1,
                                                         "model": "test-model", **c}).encode() + b"\n\n" for c in chunks)
                self._send(body + b"data: [DONE]\n\n", "text/event-stream")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def usage(self, req: dict[str, Any]) -> dict[str, Any]:
        msgs = req.get("messages") or []
        blocks = ([json.dumps(req["tools"], sort_keys=True)] if req.get("tools") else []) + [
            m["content"] if m.get("role") == "system" and isinstance(m.get("content"), str)
            else json.dumps(m, sort_keys=True) for m in msgs]
        sizes = [tokens(b) for b in blocks]
        text = "\x00".join(blocks)
        uncached = sizes[-1] if blocks else 0
        with self.lock:
            common = max((_common_prefix(text, seen) for seen in self.cache), default=0)
            read = min(common // 4, sum(sizes) - uncached)  # whole tokens of the longest prefix seen before
            write = sum(sizes) - read - uncached
            self.cache.add(text)
            n = len(self.log)
            output = 5 + n
            system = next((m.get("content") for m in msgs if m.get("role") == "system"), None)
            self.log.append({"agent": bool(req.get("tools")), "system": system, "tools": len(req.get("tools") or ()),
                             "input": uncached, "read": read, "write": write, "output": output})
        total = sum(sizes)
        out: dict[str, Any] = {"prompt_tokens": total, "completion_tokens": output, "total_tokens": total + output,
                               "cache_creation_input_tokens": write}
        if n % 2 == 0:  # the OpenAI shape
            out["prompt_tokens_details"] = {"cached_tokens": read}
        else:  # the Anthropic shape, as proxies routing Claude expose it
            out["cache_read_input_tokens"] = read
        return out

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def new_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / "memories").mkdir(parents=True)
    (home / "config.yaml").write_text(
        "model:\n  default: test-model\n  provider: custom\n  base_url: http://127.0.0.1:9/v1\n", encoding="utf-8")
    install_plugin(HermesHome(home))
    return home


def memdeck(home: Path, *args: str) -> Any:
    proc = subprocess.run([sys.executable, "-m", "memdeck.core.cli", "--home", str(home), *args],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


@pytest.mark.parametrize("version", VERSIONS)
def test_per_turn_usage_and_the_cost_of_a_memory_edit(version: str, tmp_path: Path) -> None:
    py = hermes_or_skip(version)
    home = new_home(tmp_path)
    seed = ([{"op": "mem", "action": "add", "target": "memory", "content": e} for e in MEMORY]
            + [{"op": "mem", "action": "add", "target": "user", "content": e} for e in USER])
    run.drive(py, home, seed)
    server = CachingModel()
    try:
        steps: list[dict[str, Any]] = [{"turn": "turn one", "sid": "A"}, {"turn": "turn two", "sid": "A"},
                                       {"turn": "turn three", "sid": "A"}]
        res = run.drive(py, home, [{"op": "live_turns", "base_url": server.url, "steps": steps}], timeout=900)[0]
        assert all("turn" in r for r in res["steps"]), res
        agent_a = [r for r in server.log if r["agent"]]
        before = memdeck(home, "context", "--session", "A", "--json")
        # a memory edit, then /new: session B's prompt is built from the files now
        edit = [{"op": "mem", "action": "add", "target": "memory", "content": NEW_RULE}]
        run.drive(py, home, edit)
        res = run.drive(py, home, [{"op": "live_turns", "base_url": server.url,
                                    "steps": [{"turn": "after the edit", "sid": "B"}, {"turn": "and again", "sid": "B"}]}],
                        timeout=900)[0]
        agent_b = [r for r in server.log if r["agent"]][len(agent_a):]
        after = memdeck(home, "context", "--session", "B", "--json")
    finally:
        server.close()

    def figures(cost: dict[str, Any]) -> list[tuple[int, int, int, int]]:
        return [(r["input_tokens"], r["output_tokens"], r["cache_read_tokens"], r["cache_write_tokens"])
                for t in cost["turns"] for r in t["requests"]]

    want_a = [(r["input"], r["output"], r["read"], r["write"]) for r in agent_a]
    want_b = [(r["input"], r["output"], r["read"], r["write"]) for r in agent_b]
    assert len(want_a) == 3 and len(want_b) == 2
    # the per-turn figures memdeck shows equal what the server reported, in both shapes
    assert figures(before["cost"]) == want_a
    assert figures(after["cost"]) == want_b
    assert [t["turn"] for t in before["cost"]["turns"]] == [1, 2, 3]
    # later turns of A read the cached prefix; B's first turn writes the new system prompt again
    assert all(r[2] > 0 for r in want_a[1:])
    first_b = after["cost"]["turns"][0]
    assert first_b["cache_write_tokens"] == agent_b[0]["write"] > 0
    assert first_b["break"] is not None and first_b["break"]["reason"] == "new session"
    assert after["cost"]["turns"][1]["break"] is None
    # the estimate made before the write is within 10 % of what the provider wrote again
    # the dialog's figure: the estimate of the files then, with the entry the edit adds (and its delimiter)
    est = with_change(before["cost"]["write_estimate"], len(NEW_RULE) + len("\n§\n"))
    assert est["when"] == "next session" and est["tier"] == "volatile" and est["tokens"] is not None
    written = agent_b[0]["write"]
    assert abs(est["tokens"] - written) <= 0.10 * written, (est, written)
    # pre_api_request's fingerprint of each request: the system message as sent, the tools as sent
    def sent(r: dict[str, Any]) -> tuple[str, int]:
        return hashlib.sha256(r["system"].encode()).hexdigest()[:16], r["tools"]

    recorded = [(q["prompt_sha"], q["tool_count"]) for c in (before["cost"], after["cost"])
                for t in c["turns"] for q in t["requests"]]
    assert recorded == [sent(r) for r in agent_a + agent_b]
    assert len({sha for sha, _ in recorded[:3]}) == 1 and recorded[3][0] != recorded[0][0]  # the edit, after /new
    # totals: state.db's session counters as Hermes kept them, beside memdeck's own
    tot = before["cost"]["session_totals"]
    assert tot["cache_read_tokens"] == sum(r[2] for r in want_a)
    assert tot["cache_write_tokens"] == sum(r[3] for r in want_a)
    assert before["cost"]["recorded_totals"]["cache_read_tokens"] == sum(r[2] for r in want_a)


@pytest.mark.parametrize("version", list(SPECS))
def test_each_section_is_in_the_tier_memdeck_says(version: str, tmp_path: Path) -> None:
    """The tier memdeck gives each section (core/context/tiers.py) is the tier that version's own
    ``build_system_prompt_parts`` put its text in, for a prompt with a skill, AGENTS.md, SOUL.md,
    MEMORY and USER."""
    from memdeck.core.context.sections import split_prompt
    from memdeck.core.context.tiers import tiers_for
    from memdeck.core.hermes_version import HermesVersion

    py = hermes_or_skip(version)
    home = new_home(tmp_path)
    seed = ([{"op": "mem", "action": "add", "target": "memory", "content": e} for e in MEMORY]
            + [{"op": "mem", "action": "add", "target": "user", "content": e} for e in USER])
    run.drive(py, home, seed)
    (built,) = run.drive(py, home, [{"op": "prompt_build", "sid": "T", "platform": "telegram",
                                     "agents_md": "# Project notes\n\nRun `make test` before every commit.\n",
                                     "skills": [{"category": "devops", "name": "deploy-check",
                                                 "description": "Check a deploy before it ships."}]}])
    tiers = built["tiers"]
    assert tiers is not None, "every version of the matrix has agent/system_prompt.py's tiers"
    prompt = built["prompt"]
    lay = split_prompt(prompt)
    mine = tiers_for(HermesVersion.of(".".join(version.split(".")[:3]).replace(".post1", "").replace(".post2", "")))
    checked = {}
    for span in lay.spans:
        text = prompt[span.start:span.end].strip()
        want = mine.tier_of(span.section, text)
        holders = [t for t in ("stable", "context", "volatile") if text and text in (tiers[t] or "")]
        assert want in holders, (version, span.section, want, holders, text[:120])
        checked[span.section] = want
    assert {"memory", "user", "context_files", "skills"} <= set(checked), checked
