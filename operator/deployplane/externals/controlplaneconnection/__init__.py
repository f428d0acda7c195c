"""ControlPlaneConnection's externals: the check of the connection (no diff: it never
changes anything on the control plane)."""

from deployplane.externals.controlplaneconnection.client import (
    ConnectionCheck,
    ControlPlaneConnectionConnecter,
)

__all__ = ["ConnectionCheck", "ControlPlaneConnectionConnecter"]
