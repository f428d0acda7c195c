"""`deployplane plan -f PATH`: what applying the manifests would do to the control plane.

One row per AgentDeployment, Listener and ControlPlaneConnection of the manifests (and,
with `--prune`, per live one they no longer have): `create`, `new-revision`, `rebuild`,
`update`, `none`, `delete`, or `refused` (the apiserver's server-side dry-run said no).
Each row is the operator's own decision: the kind's reconciler previews it
(`Reconciler.preview`: the pass's reads and its pure decision), over the spec as the
apiserver would store it. Nothing is written anywhere: dry-runs on Kubernetes, reads on
the control plane (a client that refuses anything else).

The modules: `command.py` (options -> validate -> complete -> run), `manifests.py`
(files, directories, kustomizations, stdin), `cluster.py` (what it reads of Kubernetes,
and the dry-run), `planner.py` (a row per resource), `rows.py` and `render.py` (pure:
the rows, the table, JSON and markdown), `readonly.py` (the control-plane client).
"""
