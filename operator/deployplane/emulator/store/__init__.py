"""Storage functions: one keyword-only function per operation of the API, one module
per entity (`deployments`, `patch`, `deletion`, `revisions`, `listeners`; `rows` holds
what they share).

They take a connection (already in a transaction for writes, see `Database.write`),
the caller's workspace, and API models; they return API models and raise the errors
of `errors.py`. Every query is scoped by workspace, so another workspace's ids are
simply not found. The routes call them as `store.<operation>`.
"""

from deployplane.emulator.store.deletion import BulkOutcome, delete_deployment, delete_deployments
from deployplane.emulator.store.deploymentpatch import patch_deployment
from deployplane.emulator.store.deployments import (
    DeploymentFilters,
    create_deployment,
    get_deployment,
    list_deployments,
    redeploy_revision,
)
from deployplane.emulator.store.listeners import (
    create_listener,
    delete_listener,
    get_listener,
    list_listeners,
    patch_listener,
    put_listener,
)
from deployplane.emulator.store.revisions import get_revision, list_revisions
from deployplane.emulator.store.rows import remote_reconciled_condition

__all__ = [
    "BulkOutcome",
    "DeploymentFilters",
    "create_deployment",
    "create_listener",
    "delete_deployment",
    "delete_deployments",
    "delete_listener",
    "get_deployment",
    "get_listener",
    "get_revision",
    "list_deployments",
    "list_listeners",
    "list_revisions",
    "patch_deployment",
    "patch_listener",
    "put_listener",
    "redeploy_revision",
    "remote_reconciled_condition",
]
