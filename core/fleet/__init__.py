"""Every home at once: the fleet view's rows and the metrics for Prometheus (issue 27).

One concept per module, each importing only those before it in this list:

``stale_sessions`` the figure that needs the agent's-view feature (one function to wire);
``figures`` :class:`HomeFigures`, from ``status --json`` or from a dashboard snapshot;
``homes`` which homes make the fleet (profiles, the settings' ``fleet.homes``, ``ssh://``);
``attention`` what needs attention first (the row order); ``local`` a local home read
incrementally; ``remote`` a remote home over SSH (one shared connection per host); ``last_seen``
the last data of each remote home; ``rows`` :class:`Fleet` and :class:`FleetRow`; ``columns``
the rows as words; ``exposition`` the Prometheus collector; ``textfile`` node_exporter's
textfile; ``endpoint`` the ``/metrics`` HTTP endpoint.
"""
