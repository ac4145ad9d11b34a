"""Hermes' state.db read-only: sessions, compactions, recall, and the schema writer for demos and tests."""
