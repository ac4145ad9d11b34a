"""mdprov: the interop tests' own Hermes memory provider (a user plugin: ``$HERMES_HOME/plugins/mdprov``).

It runs inside the Hermes under test, never in memdeck. Facts live in ``$HERMES_HOME/mdprov/facts.json``
(added with its ``mdprov_remember`` tool); ``prefetch`` returns them as a markdown list, the way the
bundled providers do. ``$HERMES_HOME/mdprov/mode`` makes the prefetch fail: ``raise`` raises,
``hang`` blocks (until 30 s pass) so Hermes' prefetch timeout (0.19+) gives up on it.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from agent.memory_provider import MemoryProvider

REMEMBER = {
    "name": "mdprov_remember",
    "description": "Store one fact in mdprov.",
    "parameters": {"type": "object", "properties": {"fact": {"type": "string"}}, "required": ["fact"]},
}


class MdProv(MemoryProvider):
    def __init__(self) -> None:
        self._dir = Path(os.environ.get("HERMES_HOME", ".")) / "mdprov"

    @property
    def name(self) -> str:
        return "mdprov"

    def is_available(self) -> bool:
        return True

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        if kwargs.get("hermes_home"):
            self._dir = Path(kwargs["hermes_home"]) / "mdprov"
        self._dir.mkdir(parents=True, exist_ok=True)

    def _facts(self) -> list[str]:
        try:
            return list(json.loads((self._dir / "facts.json").read_text(encoding="utf-8")))
        except (OSError, ValueError):
            return []

    def _mode(self) -> str:
        try:
            return (self._dir / "mode").read_text(encoding="utf-8").strip()
        except OSError:
            return "ok"

    def system_prompt_block(self) -> str:
        return ""

    def prefetch(self, query: str, *, session_id: str = "") -> str:
        mode = self._mode()
        if mode == "raise":
            raise RuntimeError("mdprov: the recall backend is down")
        if mode == "hang":
            threading.Event().wait(30)
            return ""
        facts = self._facts()
        return ("## mdprov recall\n" + "\n".join(f"- {f}" for f in facts)) if facts else ""

    def sync_turn(self, user_content: str, assistant_content: str, *, session_id: str = "") -> None:
        return None

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return [REMEMBER]

    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        if tool_name != "mdprov_remember":
            return json.dumps({"error": f"unknown tool {tool_name}"})
        facts = self._facts() + [str(args.get("fact", ""))]
        self._dir.mkdir(parents=True, exist_ok=True)
        (self._dir / "facts.json").write_text(json.dumps(facts), encoding="utf-8")
        return json.dumps({"status": "stored", "count": len(facts)})


def register(ctx: Any) -> None:
    ctx.register_memory_provider(MdProv())
