"""The generic managed-resource core (after crossplane-runtime's `managed` package).

It imports no kind, no HTTP library and no kopf (tests/unit/reconcile/test_core_imports.py):
per-kind code plugs in through `external.ExternalClient` and a `status.ResourceStatus`
subclass; the Kopf layer (`deployplane.controller`) only builds these pieces, hands them
the Kubernetes requests (list, watch, writes, Events) and starts them.

- status.py, conditions.py: the typed status every kind shares, kstatus conditions
- external.py: Managed, Observation, the ExternalClient/Connecter protocols
- passes.py: one resource's pass (`PassRunner.one_pass`, the recipe read top to bottom,
  a comment per step; a watched body -> the `Managed` the reconciler sees), and its
  finalization on deletion
- reconciler.py: resolve -> observe -> diff -> create | update, crash-safe creation
- errors.py, outcome.py: the external service's errors as the kind's client classified
  them (`deployplane.externals.errors`); a verdict (from an observation, an error or an
  unreadable spec) -> status, state, events
- schedule.py: when a resource is looked at next, and how closely (the resync-interval
  annotation included); `next_pass`, the one mapping to the `Result` a pass hands the
  work queue
- resourcestate.py: what the process knows of one resource between passes
- writer.py, mergepatch.py: a pass's writes to the object (marker, finalizer, status);
  the minimal status merge patch (also the test fakes' apiserver)
- finalizer.py: our finalizer, and why it may not come off yet (the workers, the
  writer, the state and the pass runner all read it)
- workqueue.py, workers.py: the rate-limited queue of keys and the pool of workers
- eventrecorder.py: Events posted in the background at a bounded rate
"""
