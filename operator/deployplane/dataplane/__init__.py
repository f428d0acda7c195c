"""The data plane: a listener agent turns its deployments into Kubernetes workloads.

`render` (render.py) is the pure part: deployment + revision + listener -> manifests.
"""
