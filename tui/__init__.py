"""memdeck's Textual dashboard: thin widgets over one immutable snapshot built by ``core``.

Entry point: :func:`tui.app.make_app`. Nothing in ``core`` imports this package.
"""
