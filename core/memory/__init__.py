"""Memory files: format, entry selection, the locked store, pending writes, the threat scan."""
