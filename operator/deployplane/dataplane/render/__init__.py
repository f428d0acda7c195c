"""Deployment + revision + listener -> the Kubernetes objects of one agent server.

A pure function: no I/O, no clock, no randomness. The same input gives equal objects,
so a second server-side apply of the same revision changes nothing. Values the API
never returns (secret values, the database password) are explicit arguments: the agent
gets them from its own private source and the renderer stays a function of its input.

Every object but the owner carries an ownerReference to the owner ConfigMap whose uid
is a placeholder: the uid exists only once the owner has been applied, so the agent
applies `Rendered.owner` first and then `with_owner(rendered.objects, uid)`. Deleting
the owner then garbage-collects everything else (StatefulSet PVCs included, through
the StatefulSet's `whenDeleted: Delete` retention policy, and the in-memory server's
claim, which the owner owns directly).

This module is the entry point (`render`) and the public names; the parts are split by
what they render: context.py (names, labels, the owner ConfigMap), secrets.py (Secrets
and environment), workload.py (agent server and queue), scaling.py (replicas left to
the autoscalers), security.py (Pod Security), state.py (the in-memory server's files on
the deployment's claim), service.py, backing.py (Redis and PostgreSQL), quantities.py
(CPU, memory, counts), model.py (`Rendered`), and fieldmap.py (`FIELD_MAP`: what each
ResourceSpec field becomes; docs/dataplane.md prints it).
"""

from __future__ import annotations

from collections.abc import Mapping

from deployplane.api.dataplane import LABEL_DEPLOYMENT_ID, LABEL_LISTENER_ID, ServerRuntime
from deployplane.api.models import Deployment, Listener, Revision
from deployplane.dataplane.render import (
    backing,
    network,
    routing,
    scaling,
    secrets,
    state,
    workload,
)
from deployplane.dataplane.render.context import (
    ANNOTATION_REVISION_ID,
    DATABASE,
    LABEL_COMPONENT,
    QUEUE,
    REDIS,
    SERVER,
    Context,
    base_name,
    database_secret_name,
    namespace_for,
    owner,
)
from deployplane.dataplane.render.fieldmap import FIELD_MAP
from deployplane.dataplane.render.model import (
    OWNER_DIGEST,
    OWNER_OBJECT_DIGESTS,
    OWNER_UID_PLACEHOLDER,
    Obj,
    Rendered,
    RenderError,
    RenderWarning,
    Retired,
    Scaled,
    object_digests,
    object_key,
    render_digest,
    with_owner,
)
from deployplane.dataplane.render.quantities import cpu_quantity, memory_quantity
from deployplane.dataplane.render.routing import ANNOTATION_ROUTE, ANNOTATION_URL
from deployplane.dataplane.render.settings import (
    Autoscaler,
    DataPlaneSettings,
    PodSecurity,
    Routing,
    SettingsError,
)

__all__ = [
    "ANNOTATION_REVISION_ID",
    "ANNOTATION_ROUTE",
    "ANNOTATION_URL",
    "DATABASE",
    "FIELD_MAP",
    "LABEL_COMPONENT",
    "LABEL_DEPLOYMENT_ID",
    "LABEL_LISTENER_ID",
    "OWNER_DIGEST",
    "OWNER_OBJECT_DIGESTS",
    "OWNER_UID_PLACEHOLDER",
    "QUEUE",
    "REDIS",
    "SERVER",
    "Autoscaler",
    "DataPlaneSettings",
    "PodSecurity",
    "RenderError",
    "RenderWarning",
    "Rendered",
    "Retired",
    "Routing",
    "Scaled",
    "SettingsError",
    "base_name",
    "cpu_quantity",
    "database_secret_name",
    "memory_quantity",
    "namespace_for",
    "object_key",
    "render",
    "render_route",
    "with_owner",
]

DEFAULT_PROGRESS_DEADLINE_SECONDS = 600


def render(
    deployment: Deployment,
    revision: Revision,
    listener: Listener,
    image: str,
    *,
    secret_values: Mapping[str, str],
    database_password: str,
    progress_deadline_seconds: int = DEFAULT_PROGRESS_DEADLINE_SECONDS,
    settings: DataPlaneSettings = DataPlaneSettings(),
    runtime: ServerRuntime = ServerRuntime.POSTGRES,
) -> Rendered:
    """Every object of `deployment` at `revision`, in the namespace it must run in.

    `image` is what the agent deploys (the revision's `image_uri`, or the build output
    for `git_host`). `secret_values` holds the value of each secret the deployment
    names (the API returns names only); `database_password` is the PostgreSQL
    password; `settings` are the agent's (PostgreSQL image, autoscaler, routing,
    NetworkPolicy, Pod Security); `runtime` the server the image runs: the in-memory one gets its
    server alone (one replica: its runs and threads live in its memory) with its files
    on the deployment's claim (state.py), the vendor's (the default) its queue workers,
    Redis and PostgreSQL too. A Deployment an autoscaler targets carries no
    `replicas` (scaling.py: `Rendered.scaled` says what it starts at). Raises
    `RenderError` when the input cannot make valid objects.
    """
    if not image:
        raise RenderError(f"revision {revision.id} has no image to deploy")
    ctx = Context.of(
        deployment, revision, listener, image, progress_deadline_seconds, settings, runtime
    )
    env = secrets.app_env(deployment, ctx)
    vendor = not ctx.in_memory  # the vendor's server: its database, queue and Redis too
    made: list[Obj] = [
        secrets.user_secrets(ctx, deployment, secret_values),
        *([secrets.db_secret(ctx, database_password)] if vendor else []),
        *workload.server(ctx, env),
        *(workload.queue(ctx, env) if vendor else []),
        *(backing.redis(ctx) if vendor else []),
        *(backing.database(ctx) if vendor else []),
        *routing.route(ctx),
        *network.network_policy(ctx),
    ]
    objects, scaled, retired = scaling.hand_to_autoscalers(ctx, made)
    the_owner = owner(ctx)
    the_owner["data"][OWNER_DIGEST] = render_digest(objects)
    the_owner["data"][OWNER_OBJECT_DIGESTS] = object_digests(objects)
    clamped = state.scale_warning(ctx) if ctx.in_memory else None
    return Rendered(
        namespace=ctx.namespace,
        owner=the_owner,
        objects=objects,
        url=routing.url(ctx),
        runtime=runtime,
        warnings=() if clamped is None else (clamped,),
        scaled=scaled,
        retired=retired,
    )


def render_route(
    deployment: Deployment, listener: Listener, settings: DataPlaneSettings
) -> tuple[Obj | None, str | None]:
    """Only the deployment's route (None without routing) and its URL: what a change of
    the routing settings re-applies, without the revision's image or secrets."""
    ctx = Context.of(deployment, None, listener, "", 0, settings)
    objects = routing.route(ctx)
    return (objects[0] if objects else None), routing.url(ctx)
