"""The AgentDeployment kind in one place: its spec (`spec.py`), status (`status.py`),
names, CEL rules and columns (`kind.py`), and its natural key (`keys.py`).
"""

from deployplane.kinds.agentdeployment.kind import KIND

__all__ = ["KIND"]
