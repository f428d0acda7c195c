"""The deployment's Secrets (user secrets, database password) and the environment of
the agent server and queue workers, which reads them by reference, never by value."""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from typing import Any

from deployplane.api.models import Deployment
from deployplane.dataplane.render.context import (
    DATABASE,
    POSTGRES_PORT,
    REDIS,
    REDIS_PORT,
    SERVER,
    Context,
)
from deployplane.dataplane.render.model import Obj, RenderError

DB_PASSWORD_ENV = "DATABASE_PASSWORD"
# Environment the renderer sets itself; a user secret of the same name is refused.
RESERVED_ENV = frozenset({DB_PASSWORD_ENV, "DATABASE_URI", "REDIS_URI", "DEPLOYPLANE_COMPONENT"})

_SECRET_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")


def _b64(value: str) -> str:
    return base64.b64encode(value.encode()).decode()


def user_secrets(ctx: Context, deployment: Deployment, values: Mapping[str, str]) -> Obj:
    names = sorted({s.name for s in deployment.secrets or []})
    missing = [n for n in names if n not in values]
    if missing:
        raise RenderError(f"secret {missing[0]} has no value for deployment {ctx.deployment_id}")
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": ctx.metadata(f"{ctx.base}-secrets", SERVER),
        "type": "Opaque",
        "data": {n: _b64(values[n]) for n in names},
    }


def db_secret(ctx: Context, password: str) -> Obj:
    if not password:
        raise RenderError(f"deployment {ctx.deployment_id} needs a database password")
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": ctx.metadata(f"{ctx.base}-db", DATABASE),  # database_secret_name
        "type": "Opaque",
        "data": {"password": _b64(password)},
    }


def secret_env(name: str, secret: str, key: str) -> Obj:
    return {"name": name, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}


def _secret_references(deployment: Deployment) -> list[tuple[str, str, str]]:
    """(env name, Secret name, key) of each `secret_references` entry, if the model has them."""
    refs = getattr(deployment, "secret_references", None) or []
    return sorted((_ref(r, "name"), _ref(r, "secret_name"), _ref(r, "secret_key")) for r in refs)


def _ref(ref: Any, key: str) -> str:
    value = ref.get(key) if isinstance(ref, Mapping) else getattr(ref, key, None)
    if not value:
        raise RenderError(f"a secret_references entry has no {key}")
    return str(value)


def app_env(deployment: Deployment, ctx: Context) -> list[Obj]:
    """Environment shared by the agent server and the queue workers (sorted: stable)."""
    env: list[Obj] = []
    seen: set[str] = set()

    def add(entry: Obj, origin: str) -> None:
        name = entry["name"]
        if name in RESERVED_ENV:
            raise RenderError(f"{origin} {name} clashes with a variable the data plane sets")
        if name in seen:
            raise RenderError(f"environment variable {name} is set twice ({origin})")
        seen.add(name)
        env.append(entry)

    for name in sorted({s.name for s in deployment.secrets or []}):
        if not _SECRET_KEY.match(name):
            raise RenderError(f"secret name {name!r} is not a valid Kubernetes Secret key")
        add(secret_env(name, f"{ctx.base}-secrets", name), "secret")
    for name, secret, key in _secret_references(deployment):
        add(secret_env(name, secret, key), "secret_references entry")
    if ctx.in_memory:
        return env  # no PostgreSQL nor Redis to name
    db_host = f"{ctx.name(DATABASE)}:{POSTGRES_PORT}"
    env += [
        secret_env(DB_PASSWORD_ENV, f"{ctx.base}-db", "password"),
        # $(VAR) is expanded by the kubelet: the password never appears in the object.
        {
            "name": "DATABASE_URI",
            "value": f"postgres://postgres:$({DB_PASSWORD_ENV})@{db_host}/postgres?sslmode=disable",
        },
        {"name": "REDIS_URI", "value": f"redis://{ctx.name(REDIS)}:{REDIS_PORT}"},
    ]
    return env
