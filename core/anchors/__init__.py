"""MemLock anchors: the anchor store (session and persist files) and the audit."""
