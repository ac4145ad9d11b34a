"""What the dashboard and `status --json` show, one module per concept.

``snapshot`` the ``DeckSnapshot`` and its builder; ``recall_preview`` the Recall panel's preview;
``status`` the status document; ``alerts`` the transitions worth a toast; ``banners`` the text of a
failed source's banner.
"""
