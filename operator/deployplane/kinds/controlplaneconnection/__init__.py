"""The ControlPlaneConnection kind in one place: its spec (`spec.py`), status
(`status.py`), names, CEL rules, columns and who uses it (`kind.py`).
"""

from deployplane.kinds.controlplaneconnection.kind import KIND

__all__ = ["KIND"]
