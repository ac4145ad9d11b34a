"""MemLock anchors, one module per concept (each imports only those listed after it).

``store`` ``AnchorStore``: pin, unpin, update, archive, restore (composed of ``reverting``, undo,
and ``files``, the session files and global pins with their manifest); ``model`` ``Anchor``,
``SessionAnchors`` and validation; ``lifecycle`` the session audit (``audit_session``);
``integrity_history`` per-compaction verdicts and their cache; ``rehydration`` the reminder block;
``audit`` the keyword/semantic audit and integrity score; ``encoder`` the semantic audit's model
(found, verified, run, cached); ``whatif`` an unpinned anchor replayed through past compactions;
``rules`` MemLock's field rules.
"""
