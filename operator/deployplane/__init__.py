"""deployplane: run agent-server deployments with GitOps.

A Kopf operator for `AgentDeployment` and `Listener` custom resources, a faithful
emulator of the deployment control plane, and a typed client and CLI over one set of
API models (`deployplane.api.models`).
"""

__version__ = "0.1.0"
