"""Memory files (MEMORY.md / USER.md), one module per concept.

``entries`` the entry format, ids and selectors; ``reader`` reading a file without the lock;
``store`` the locked writer ``MemoryStore`` (composed of ``archiving``, ``replay``, ``reverting``);
``results`` ``WriteResult``; ``pending`` / ``staged`` Hermes' staged writes; ``threats`` the scan;
``prompt_block`` the frozen system-prompt memory block; ``context_fence`` the ``<memory-context>``
fence of recalled memory.
"""
