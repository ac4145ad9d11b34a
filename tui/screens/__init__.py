"""Modal screens: confirmation, help, editors and pickers."""
