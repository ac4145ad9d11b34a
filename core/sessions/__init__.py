"""Hermes' state.db, read-only, one module per concept.

``statedb`` the reader ``StateDB`` (composed of ``connection``, ``compaction_events`` and
``listing``; adds the incremental ``refresh``); ``records`` the values it returns; ``side_files``
the -wal/-shm files a reader creates; ``compaction`` summary markers; ``recall``
``session_search``-equivalent recall; ``profile`` which Hermes wrote a home; ``hermes_schema`` a
Hermes-shaped writer for demos and tests.
"""
