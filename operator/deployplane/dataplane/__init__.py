"""The data plane: the listener agent that runs a listener's deployments on its cluster.

`deployplane listener run` (cli.py) starts `agent.Agent`, which pulls the listener's
deployments over the published API (`worksource`), renders each (`render`, a pure
function), applies the objects with server-side apply (`applier`, over `kube`), maps
the rollout to a revision status (`rollout`, pure) and reports it through the
control plane's data-plane extension (`protocol`). See docs/dataplane.md.
"""
