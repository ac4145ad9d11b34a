"""What the running agent sees: its frozen memory against the files, its prompt by section, the next
turn's additions, the token estimate and the next compaction.

One module per concept, each importing only those before it in this list:

``frozen`` the MEMORY/USER blocks of a stored prompt and their entry-by-entry diff against the
files; ``tokens`` Hermes' estimator per version, exact counts with an offline tokenizer, the
calibration against recorded usage; ``new_session`` how each platform starts a new session;
``sections`` the prompt split into its sections; ``budget`` the compaction threshold from
config.yaml; ``next_turn`` what the next request adds (messages, reminder block, recall fence;
``injected`` for what providers appended, issue 25); ``whatif`` a write's effect on the next
session's block; ``prompts`` the prompts read once per prompt; ``report`` the composition.

All read-only: memdeck never writes state.db.
"""

from __future__ import annotations

import importlib
from typing import Any

# Names are imported on first use (as ``core/history/__init__.py`` does): the plugin imports
# ``core.context.frozen`` alone and must not pull the state.db reader and the report with it
# (tests/core/test_plugin_install.py: the vendored core holds only what the plugin runs).
_HOME_OF = {
    "FrozenBlock": "frozen", "FrozenMemory": "frozen", "MemoryChange": "frozen", "compare": "frozen",
    "diff_frozen": "frozen", "find_blocks": "frozen", "new_session_hint": "new_session",
    "not_seen_until": "new_session", "PromptCache": "prompts", "ContextReport": "report", "SessionDiff": "report",
    "build_report": "report", "disk_entries": "report", "open_session_diffs": "report", "verdict_for": "report",
    "SECTION_NAMES": "sections", "PromptLayout": "sections", "split_prompt": "sections", "pin_what_if": "whatif",
    "what_if": "whatif",
}


def __getattr__(name: str) -> Any:
    mod = _HOME_OF.get(name)
    if mod is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{mod}"), name)
    globals()[name] = value
    return value


__all__ = [
    "SECTION_NAMES",
    "ContextReport",
    "FrozenBlock",
    "FrozenMemory",
    "MemoryChange",
    "PromptCache",
    "PromptLayout",
    "SessionDiff",
    "build_report",
    "compare",
    "diff_frozen",
    "disk_entries",
    "find_blocks",
    "new_session_hint",
    "not_seen_until",
    "pin_what_if",
    "split_prompt",
    "verdict_for",
    "what_if",
]
