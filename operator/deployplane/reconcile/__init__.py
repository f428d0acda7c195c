"""The generic managed-resource core (after crossplane-runtime's `managed` package).

It imports no kind, no HTTP library and no kopf (tests/unit/test_core_imports.py):
per-kind code plugs in through `external.ExternalClient` and a `status.ResourceStatus`
subclass; the Kopf layer only hands `loop.ResourceLoop` bodies and posts its events.

- status.py, conditions.py: the typed status every kind shares, kstatus conditions
- external.py: Managed, Observation, the ExternalClient/Connecter protocols
- reconciler.py: resolve -> observe -> diff -> create | update, crash-safe creation
- classify.py, outcome.py: errors -> reasons; a verdict -> status, state, events
- schedule.py: when a resource is looked at next, and how closely
- loop.py, statuspatch.py: one resource's loop; the minimal status merge patch
"""
