"""In-use protection of the API key Secrets the ControlPlaneConnections name.

A resource is finalized through its connection: deleting its deployment or listener
on the control plane takes the connection's API key. Deleted together (a Flux
Kustomization pruned, an Argo CD Application deleted, a namespace deleted), the Secret
would go at once and every resource would wait for it forever. So, as Kubernetes
protects a PersistentVolumeClaim in use (`kubernetes.io/pvc-protection`), the Secret
carries `SECRET_PROTECTION` (a finalizer, and a label of that name to find them by)
while a ControlPlaneConnection of its namespace names it. The connection itself is held
while a resource uses it (`deployplane.reconcile.usage`), so the Secret outlives every
resource that needs it, and no longer.

- **On**: whenever the operator reads the key to use it (the connection's check, or a
  resource's pass; at most once per `KEY_TTL` and Secret, `externals.connections`) and
  the finalizer is not there, before anything is created with that key. No watch of
  Secrets: a read it makes anyway shows whether the finalizer is on.
- **Off**: when the last connection that names the Secret lets go of it: once it is
  finalized (its users gone first), or when its spec names another Secret (the one its
  last check used is in `status.protectedSecret`, so a change made while no operator
  ran is seen by the next pass). Whether another connection names it is read from
  Kopf's index of every connection, complete in every instance of a sharded install.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Final

from deployplane.externals.kube import SecretKeeper

log = logging.getLogger("deployplane.connections")

SECRET_PROTECTION: Final = "deployplane.io/secret-protection"
"""The finalizer (and label) on an API key Secret a ControlPlaneConnection names."""

NamedBy = Callable[[str, str], list[str]]
"""(namespace, Secret name) -> the ControlPlaneConnections of the namespace naming it."""


class KeyProtection:
    """Reads API key Secrets, protecting them; lets go of them when no connection
    names them."""

    def __init__(self, kube: SecretKeeper, named_by: NamedBy) -> None:
        self._kube = kube
        self._named_by = named_by

    async def read(self, namespace: str, name: str) -> Mapping[str, str] | None:
        """The Secret's data (None: no such Secret), protected first if it is not yet.
        One being deleted already can take no finalizer: it goes, and the resources
        that need it say so (`DeletionBlocked`)."""
        secret = await self._kube.read_secret_state(namespace, name)
        if secret is None:
            return None
        unprotected = SECRET_PROTECTION not in secret.finalizers and not secret.deleting
        if unprotected and await self._kube.protect_secret(namespace, name, SECRET_PROTECTION):
            log.info("%s: API key Secret %s protected (%s)", namespace, name, SECRET_PROTECTION)
        return secret.data

    async def release(self, namespace: str, secrets: Iterable[str], *, by: str) -> list[str]:
        """Connection `by` of `namespace` no longer needs `secrets`: each one that no
        other connection names loses its protection. The names released."""
        released = []
        for secret in sorted(set(secrets)):
            if any(other != by for other in self._named_by(namespace, secret)):
                continue
            if await self._kube.release_secret(namespace, secret, SECRET_PROTECTION):
                log.info("%s: API key Secret %s released by connection %s", namespace, secret, by)
            released.append(secret)
        return released
