"""memdeck's Textual dashboard: thin widgets over one immutable snapshot built by ``core``.

Entry points: :func:`memdeck.tui.app.make_app` (the app factory) and
:func:`memdeck.tui.launch.main` (the ``memdeck`` command). Nothing in ``core`` imports this
package (tests/test_architecture.py).
"""
