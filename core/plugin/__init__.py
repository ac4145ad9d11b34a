"""The Hermes plugin: entry point, per-turn guard, installer."""
