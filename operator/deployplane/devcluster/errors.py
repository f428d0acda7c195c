"""The dev cluster's errors: one public error, and the port race `start()` retries."""

from __future__ import annotations


class DevClusterError(RuntimeError):
    """The dev cluster could not be started, or a command needs one that is not running."""


class PortTaken(DevClusterError):
    """A server could not bind the free port picked for it: someone took it first."""
