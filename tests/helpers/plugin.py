"""Fixtures for the plugin area: compacted histories, a recording PluginContext, seeded sessions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memdeck.core.anchors.model import Anchor, SessionAnchors
from memdeck.core.anchors.store import AnchorStore
from memdeck.core.config import Config, parse_config
from memdeck.core.home import HermesHome
from memdeck.core.sessions.compaction import (
    MERGED_PRIOR_CONTEXT_HEADER,
    MERGED_SUMMARY_DELIMITER,
    SUMMARY_END_MARKER,
    SUMMARY_PREFIX_0_19,
)

REPO = Path(__file__).resolve().parents[2]
VENV_PY = sys.executable


def summary_prefix() -> str:
    """Hermes' real ``SUMMARY_PREFIX`` when hermes-agent is importable, else the frozen 0.19 copy."""
    try:
        from agent.context_compressor import SUMMARY_PREFIX  # type: ignore[import-not-found]

        return SUMMARY_PREFIX
    except Exception:  # noqa: BLE001 - any import failure means the frozen 0.19 copy
        return SUMMARY_PREFIX_0_19


def summary_message(body: str, prefix: str | None = None) -> dict[str, Any]:
    """A compaction summary as Hermes writes it (prefix, body, end marker)."""
    p = summary_prefix() if prefix is None else prefix
    return {"role": "user", "content": f"{p}\n{body}\n\n{SUMMARY_END_MARKER}"}


def merged_tail_message(prior: str, body: str) -> dict[str, Any]:
    """Hermes' merge-into-tail shape: prior context header, delimiter, then the summary."""
    return {"role": "user", "content": f"{MERGED_PRIOR_CONTEXT_HEADER}\n{prior}\n\n{MERGED_SUMMARY_DELIMITER}\n\n"
                                       f"{summary_prefix()}\n{body}\n\n{SUMMARY_END_MARKER}"}


def history(active: list[str], *, body: str | None = "Earlier we discussed the project.", merged: bool = False,
            system: str = "You are Hermes.") -> list[dict[str, Any]]:
    """system, (old turns + summary when ``body``), then ``active`` texts alternating user/assistant."""
    msgs: list[dict[str, Any]] = [{"role": "system", "content": system}]
    if body is not None:
        msgs.append({"role": "user", "content": "an old turn that got compacted"})
        msgs.append(merged_tail_message("old tail text", body) if merged else summary_message(body))
    for i, t in enumerate(active):
        msgs.append({"role": "user" if i % 2 == 0 else "assistant", "content": t})
    return msgs


BULLETS = dict(id="pin_bullets", text="Always reply in bullet points, never paragraphs.",
               reminder="Always reply in bullet points, never paragraphs", priority=80,
               probes=["always", "reply", "bullet", "points", "never"])
BRITISH = dict(id="pin_british", text="Use British English spelling everywhere",
               reminder="Use British English spelling everywhere", priority=50,
               probes=["british", "english", "spelling", "everywhere"])


def seed(home: HermesHome, session_id: str, *anchors: dict[str, Any], config: Config | None = None) -> SessionAnchors:
    """Write anchors into a session file through the core (locked update_session)."""
    store = AnchorStore(home, config or Config(), actor="test")

    def mutate(s: SessionAnchors) -> SessionAnchors:
        for a in anchors:
            s.add(Anchor(id=a["id"], text=a["text"], reminder=a.get("reminder", a["text"][:120]),
                         priority=a.get("priority", 50), probes=list(a.get("probes", [])),
                         pinned=a.get("pinned", True)))
        return s

    return store.update_session(session_id, mutate)


def config_with(**memlock: Any) -> Config:
    """A Config whose ``memlock:`` section holds ``memlock`` (parsed like config.yaml)."""
    return parse_config({"memlock": memlock})


def read_session(home: HermesHome, session_id: str) -> dict[str, Any]:
    path = AnchorStore(home, Config()).find_session_file(session_id)
    assert path is not None, f"no session file for {session_id}"
    return json.loads(path.read_text(encoding="utf-8"))


@dataclass
class RecordingContext:
    """A stand-in for Hermes' PluginContext recording what ``register`` wires (unit tests)."""

    hooks: dict[str, list[Any]] = field(default_factory=dict)
    tools: dict[str, dict[str, Any]] = field(default_factory=dict)
    commands: dict[str, dict[str, Any]] = field(default_factory=dict)

    def register_hook(self, name: str, cb: Any) -> None:
        self.hooks.setdefault(name, []).append(cb)

    def register_tool(self, name: str, toolset: str, schema: dict, handler: Any, **kw: Any) -> None:
        self.tools[name] = {"toolset": toolset, "schema": schema, "handler": handler, **kw}

    def register_command(self, name: str, handler: Any, description: str = "", args_hint: str = "") -> None:
        self.commands[name] = {"handler": handler, "description": description}


def write_config(home: HermesHome, text: str) -> Path:
    home.path.mkdir(parents=True, exist_ok=True)
    home.config_path.write_text(textwrap.dedent(text), encoding="utf-8")
    return home.config_path


def run_py(code: str, *, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter (Hermes computes paths at import time)."""
    full_env = {**os.environ, **(env or {})}
    full_env["PYTHONPATH"] = str(REPO) + os.pathsep + full_env.get("PYTHONPATH", "")
    return subprocess.run([VENV_PY, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=full_env,
                          timeout=timeout, cwd=str(REPO))
