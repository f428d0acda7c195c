"""CLI command groups over the control-plane API."""
