"""Live memory: the memory changes a running Hermes session has not seen, delivered once through
the plugin's ``pre_llm_call`` context (appended to the user turn, never the system prompt).

One module per concept, each importing only those before it in this list:

``settings`` the ``memdeck:`` section of config.yaml (``live_memory``, ``live_memory_max_chars``);
``changes`` what differs per session (:mod:`memdeck.core.context.frozen`'s diff, keyed by an
entry hash); ``block`` the text the agent sees (``notice``: one line; ``delta``: a fenced
``<memory-update>`` block); ``budget`` what fits in ``live_memory_max_chars``, newest first;
``record`` what each session was sent (memdeck.db ``live_deliveries``); ``delivery`` each
difference's state for ``memdeck context --json`` (delivered / waiting / withheld).

Pure functions of text except :mod:`.record`, which reads and writes memdeck.db only.
"""

from __future__ import annotations

from .block import FENCE_CLOSE, FENCE_OPEN, delta_block, notice_line
from .budget import Fitted, fit
from .changes import LiveChange, entry_hash, live_changes
from .settings import MODES, LiveSettings, live_settings

__all__ = [
           "FENCE_CLOSE",
           "FENCE_OPEN",
           "MODES",
           "Fitted",
           "LiveChange",
           "LiveSettings",
           "delta_block",
           "entry_hash",
           "fit",
           "live_changes",
           "live_settings",
           "notice_line",
]
