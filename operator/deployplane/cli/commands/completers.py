"""What TAB offers for a resource argument: the names the control plane has now.

`deployplane deployments get s<TAB>` asks the control plane for the deployments whose
name contains `s` (the published `name_contains` filter) and offers those that start
with it; listeners are offered by `compute_id`, revisions by id (of the deployment named
before them). The connection is the command's own (its flags typed so far, the
`DEPLOYPLANE_*` variables, the context), read as `deployplane.cli.config.resolve` does.

A TAB must answer at once and never print into the terminal: one request with a short
timeout, over the standard library's `http.client` (the typed client's httpx and
pydantic would cost more CPU than the whole request), and any failure (no connection
configured, no answer, an error status, a body not as expected) offers nothing.
"""

from __future__ import annotations

import json
from typing import Any, Final
from urllib.parse import urlencode, urlsplit

import typer

from deployplane import __version__
from deployplane.cli.config.options import ConnectionOptions

__all__ = ["TIMEOUT", "deployment_names", "listener_names", "revision_ids"]

TIMEOUT: Final = 2.0
"""Seconds a TAB waits for the control plane before offering nothing."""
_LIMIT: Final = 100  # the service's largest page: one request
_OPTION_NAMES: Final = ("url", "api_key", "tenant_id", "context")


def _options(ctx: typer.Context) -> ConnectionOptions:
    """The connection options typed so far: the command's own win over its group's
    (click has read the variables into both)."""
    found: dict[str, str | None] = dict.fromkeys(_OPTION_NAMES)
    current: Any = ctx
    while current is not None:
        for name in _OPTION_NAMES:
            value = current.params.get(name)
            if found[name] is None and isinstance(value, str):
                found[name] = value
        current = current.parent
    return ConnectionOptions(**found)


def _get(ctx: typer.Context, path: str, query: dict[str, str | int]) -> list[dict[str, Any]]:
    """The `resources` of one listing page; `OSError`/`ValueError` on any failure."""
    import http.client

    from deployplane.cli.config.resolve import resolved

    connection = resolved(_options(ctx))
    url = urlsplit(connection.url)
    if url.scheme not in ("http", "https") or not url.hostname:
        raise ValueError("not an http(s) URL")
    kind = http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
    conn = kind(url.hostname, url.port, timeout=TIMEOUT)
    headers = {
        "Accept": "application/json",
        "User-Agent": f"deployplane/{__version__}",
        "X-Api-Key": connection.api_key,
    }
    if connection.tenant_id:
        headers["X-Tenant-Id"] = connection.tenant_id
    try:
        conn.request("GET", f"{url.path.rstrip('/')}{path}?{urlencode(query)}", headers=headers)
        answer = conn.getresponse()
        body = answer.read()
    finally:
        conn.close()
    if answer.status != 200:
        raise ValueError(f"HTTP {answer.status}")
    resources = json.loads(body).get("resources")
    if not isinstance(resources, list):
        raise ValueError("no resources")
    return [item for item in resources if isinstance(item, dict)]


def _offered(values: list[Any], incomplete: str) -> list[str]:
    return sorted({v for v in values if isinstance(v, str) and v.startswith(incomplete)})


def deployment_names(ctx: typer.Context, incomplete: str) -> list[str]:
    """The names of the deployments that start with `incomplete`."""
    try:
        query: dict[str, str | int] = {"limit": _LIMIT}
        if incomplete:
            query["name_contains"] = incomplete
        found = _get(ctx, "/v2/deployments", query)
        return _offered([item.get("name") for item in found], incomplete)
    except Exception:  # a TAB never fails: it offers nothing
        return []


def listener_names(ctx: typer.Context, incomplete: str) -> list[str]:
    """The `compute_id`s of the listeners that start with `incomplete` (the listing has
    no filter: the first page, the service's largest)."""
    try:
        found = _get(ctx, "/v2/listeners", {"limit": _LIMIT})
        return _offered([item.get("compute_id") for item in found], incomplete)
    except Exception:  # a TAB never fails: it offers nothing
        return []


def revision_ids(ctx: typer.Context, incomplete: str) -> list[str]:
    """The ids of the revisions of the deployment named before (by name or id), newest
    first as the service lists them."""
    try:
        ref = ctx.params.get("ref")
        if not isinstance(ref, str) or not ref:
            return []
        deployment_id = _deployment_id(ctx, ref.removeprefix("deployment/"))
        if deployment_id is None:
            return []
        found = _get(ctx, f"/v2/deployments/{deployment_id}/revisions", {"limit": _LIMIT})
        ids = [item.get("id") for item in found]
        return [i for i in ids if isinstance(i, str) and i.startswith(incomplete)]
    except Exception:  # a TAB never fails: it offers nothing
        return []


def _deployment_id(ctx: typer.Context, ref: str) -> str | None:
    from uuid import UUID

    try:
        return str(UUID(ref))
    except ValueError:
        pass
    found = _get(ctx, "/v2/deployments", {"limit": _LIMIT, "name_contains": ref})
    ids = [item.get("id") for item in found if item.get("name") == ref]
    return ids[0] if len(ids) == 1 and isinstance(ids[0], str) else None
