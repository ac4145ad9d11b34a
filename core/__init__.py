"""memdeck core: the headless domain and storage layer.

Everything a writer needs lives here: Hermes home resolution and config, the sidecar
lock + atomic write protocol shared with Hermes Agent 0.19, the memory store, the
threat scan, memdeck's archive/journal database, pending writes, the state.db reader,
the MemLock anchor store and audit, and recall previews.

Rules (enforced by tests/test_architecture.py and import-linter): no module in this package imports
``textual`` or ``rich``, and modules import each other *relatively*, so the whole
package can be vendored into the directory form of memdeck's Hermes plugin.
"""

__version__ = "0.1.0"
