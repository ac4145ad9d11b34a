"""Panels and small widgets of the dashboard."""
