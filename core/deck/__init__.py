"""memdeck's own store: memdeck.db, the journal and the archive."""
