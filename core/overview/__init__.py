"""What the dashboard and `status --json` show: the snapshot and the status document."""
