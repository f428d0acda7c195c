"""deployplane: run agent-server deployments with GitOps.

Three programs: a Kopf operator for the `AgentDeployment`, `Listener` and
`ControlPlaneConnection` custom resources (`controller/`), the listener agent of the
data plane (`dataplane/`) and a faithful emulator of the deployment control plane
(`emulator/`); and a typed client and CLI over one set of API models
(`deployplane.api.models`).
"""

__version__ = "0.1.0"
