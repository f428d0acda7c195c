"""The generic managed-resource reconciler (after crossplane-runtime's `managed` package).

It imports neither kopf nor httpx: per-kind code plugs in through `ExternalClient`,
and the Kopf layer only feeds it `Managed` snapshots and applies its `Outcome`.
"""
