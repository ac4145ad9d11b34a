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

from .frozen import FrozenBlock, FrozenMemory, MemoryChange, compare, diff_frozen, find_blocks
from .new_session import new_session_hint, not_seen_until
from .prompts import PromptCache
from .report import ContextReport, SessionDiff, build_report, disk_entries, open_session_diffs, verdict_for
from .sections import SECTION_NAMES, PromptLayout, split_prompt
from .whatif import pin_what_if, what_if

__all__ = ["ContextReport", "FrozenBlock", "FrozenMemory", "MemoryChange", "PromptCache", "PromptLayout",
           "SECTION_NAMES", "SessionDiff", "build_report", "compare", "diff_frozen", "disk_entries", "find_blocks",
           "new_session_hint", "not_seen_until", "open_session_diffs", "pin_what_if", "split_prompt", "verdict_for",
           "what_if"]
