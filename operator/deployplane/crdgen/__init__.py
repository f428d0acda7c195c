"""The generator of what the kind registry implies outside Python: the CRD files (in
`crds/` and the chart) and the manifests listing every kind (kustomization, the
operator's ClusterRole). It sits above `kinds/` (which it reads) and `crd/` (the schema
pieces the kinds are built from), so no package below imports upward:
`python -m deployplane.crdgen [--check] [OUT_DIR]`."""
