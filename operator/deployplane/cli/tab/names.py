"""What TAB offers for a resource argument: the names the control plane has now.

`deployplane deployments get s<TAB>` asks the control plane for the deployments whose
name contains `s` (the published `name_contains` filter) and offers those that start
with it; listeners are offered by `compute_id`, revisions by id (of the deployment named
before them). The connection is the command's own: its flags typed so far, the
`DEPLOYPLANE_*` variables, the context, read as `deployplane.cli.clientconfig.resolve` does.

A TAB must answer at once and never print into the terminal: one request with a short
timeout, over the standard library's `http.client` (the typed client's httpx and
pydantic would cost more CPU than the whole request), and any failure (no connection
configured, no answer, an error status, a body not as expected) offers nothing.

The contexts of the config file are read with YAML alone (not the config file's models,
whose pydantic would cost a TAB several times its answer). The commands' completers
(`deployplane.cli.commands.completers`) call these.
"""

from __future__ import annotations

import json
from urllib.parse import urlencode, urlsplit

from deployplane import __version__
from deployplane.cli.clientconfig.options import ConnectionOptions

TYPE_CHECKING = False  # not typing's: its import would cost a TAB a tenth of its answer
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any, Final

__all__ = [
    "KINDS",
    "TIMEOUT",
    "context_names",
    "deployment_names",
    "listener_names",
    "offered",
    "revision_ids",
]

TIMEOUT: Final = 2.0
"""Seconds a TAB waits for the control plane before offering nothing."""
_LIMIT: Final = 100  # the service's largest page: one request


def _get(
    options: ConnectionOptions, path: str, query: Mapping[str, str | int]
) -> list[dict[str, Any]]:
    """The `resources` of one listing page; `OSError`/`ValueError` on any failure."""
    import http.client

    from deployplane.cli.clientconfig.resolve import resolved

    connection = resolved(options)
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


def _starting(values: list[Any], incomplete: str) -> list[str]:
    return sorted({v for v in values if isinstance(v, str) and v.startswith(incomplete)})


def deployment_names(options: ConnectionOptions, incomplete: str) -> list[str]:
    """The names of the deployments that start with `incomplete`."""
    query: dict[str, str | int] = {"limit": _LIMIT}
    if incomplete:
        query["name_contains"] = incomplete
    found = _get(options, "/v2/deployments", query)
    return _starting([item.get("name") for item in found], incomplete)


def listener_names(options: ConnectionOptions, incomplete: str) -> list[str]:
    """The `compute_id`s of the listeners that start with `incomplete` (the listing has
    no filter: the first page, the service's largest)."""
    found = _get(options, "/v2/listeners", {"limit": _LIMIT})
    return _starting([item.get("compute_id") for item in found], incomplete)


def revision_ids(options: ConnectionOptions, incomplete: str, ref: str | None) -> list[str]:
    """The ids of the revisions of deployment `ref` (a name or an id, as typed before
    them), newest first as the service lists them."""
    if not ref:
        return []
    deployment_id = _deployment_id(options, ref.removeprefix("deployment/"))
    if deployment_id is None:
        return []
    found = _get(options, f"/v2/deployments/{deployment_id}/revisions", {"limit": _LIMIT})
    ids = [item.get("id") for item in found]
    return [i for i in ids if isinstance(i, str) and i.startswith(incomplete)]


def _deployment_id(options: ConnectionOptions, ref: str) -> str | None:
    from uuid import UUID

    try:
        return str(UUID(ref))
    except ValueError:
        pass
    found = _get(options, "/v2/deployments", {"limit": _LIMIT, "name_contains": ref})
    ids = [item.get("id") for item in found if item.get("name") == ref]
    return ids[0] if len(ids) == 1 and isinstance(ids[0], str) else None


KINDS: Final[dict[str, Callable[[ConnectionOptions, str, str | None], list[str]]]] = {
    "deployments": lambda options, incomplete, _: deployment_names(options, incomplete),
    "listeners": lambda options, incomplete, _: listener_names(options, incomplete),
    "revisions": revision_ids,
}
"""What each kind of resource argument offers: (connection, incomplete, the `ref`
typed before it) -> names."""


def offered(kind: str, options: ConnectionOptions, incomplete: str, ref: str | None) -> list[str]:
    """The names of `kind` starting with `incomplete`; none on any failure (a TAB never
    fails, and never prints)."""
    try:
        return KINDS[kind](options, incomplete, ref)
    except Exception:
        return []


def context_names(incomplete: str) -> list[str]:
    """The names of the config file's contexts that start with `incomplete`; none when
    the file is missing or cannot be read."""
    from deployplane.cli.clientconfig.options import config_file

    try:
        import yaml

        with open(config_file(), encoding="utf-8") as file:
            contexts = (yaml.safe_load(file) or {}).get("contexts") or []
        return _starting([c.get("name") for c in contexts if isinstance(c, dict)], incomplete)
    except Exception:
        return []
