"""The generic managed-resource core (after crossplane-runtime's `managed` package).

It imports no kind, no HTTP library and no kopf (tests/unit/test_core_imports.py):
per-kind code plugs in through `external.ExternalClient` and a `status.ResourceStatus`
subclass; the Kopf layer (`deployplane.controller`) only builds these pieces, hands them
the Kubernetes requests (list, watch, writes, Events) and starts them.

- status.py, conditions.py: the typed status every kind shares, kstatus conditions
- external.py: Managed, Observation, the ExternalClient/Connecter protocols
- reconciler.py: resolve -> observe -> diff -> create | update, crash-safe creation
- errors.py, outcome.py: the external service's errors as the kind's client classified
  them (`deployplane.externals.errors`); a verdict -> status, state, events
- schedule.py: when a resource is looked at next, and how closely; the `Result` a pass
  hands the work queue
- passes.py: one resource's pass (PassRunner), and its finalization on deletion
- state.py: what the process knows of one resource between passes
- parse.py: a watched body -> the `Managed` the reconciler sees
- writer.py, statuspatch.py: a pass's writes to the object (marker, finalizer, status);
  the minimal status merge patch
- finalizer.py: our finalizer, and why it may not come off yet
- workqueue.py, workers.py: the rate-limited queue of keys and the pool of workers
- eventrecorder.py: Events posted in the background at a bounded rate
"""
