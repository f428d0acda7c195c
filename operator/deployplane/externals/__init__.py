"""One ExternalClient per kind: a custom resource's spec <-> control-plane API calls."""
