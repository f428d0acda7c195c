"""The agent's client of the control plane: the published API plus the data-plane
extension (docs/dataplane.md).

A subclass of the published client, so both share one connection pool, one retry
policy and one way of keeping credentials out of errors. The extension's paths are
under `/_dataplane/v1`, which no published path uses.
"""

from __future__ import annotations

import contextlib

from deployplane.api.client import ControlPlaneClient, Id
from deployplane.api.dataplane import Heartbeat, RevisionReport, RevisionWork, RouteReport
from deployplane.api.errors import Conflict, NotFound

__all__ = ["DataPlaneClient"]

_PREFIX = "/_dataplane/v1/listeners/{listener_id}"
HEARTBEAT = _PREFIX + "/heartbeat"
WORK = _PREFIX + "/deployments/{deployment_id}/revisions/{revision_id}"
REPORT = WORK + "/status"
DELETED = _PREFIX + "/deployments/{deployment_id}/deleted"
URL = _PREFIX + "/deployments/{deployment_id}/url"


class DataPlaneClient(ControlPlaneClient):
    """`ControlPlaneClient` (the published reads: deployments with `remote_reconciled`,
    revisions, the listener) plus the data-plane extension's calls."""

    # ----------------------------------------------------------- the extension

    async def heartbeat(self, listener_id: Id) -> Heartbeat:
        response = await self._request("PUT", HEARTBEAT, {"listener_id": listener_id})
        return self._parse(Heartbeat, response, "PUT", HEARTBEAT)

    async def revision_work(
        self, listener_id: Id, deployment_id: Id, revision_id: Id
    ) -> RevisionWork:
        ids = {
            "listener_id": listener_id,
            "deployment_id": deployment_id,
            "revision_id": revision_id,
        }
        response = await self._request("GET", WORK, ids)
        return self._parse(RevisionWork, response, "GET", WORK)

    async def report(
        self, listener_id: Id, deployment_id: Id, revision_id: Id, report: RevisionReport
    ) -> bool:
        """Sends a report; False when the revision is no longer being deployed (409:
        superseded or finished), which the agent takes as "stop"."""
        ids = {
            "listener_id": listener_id,
            "deployment_id": deployment_id,
            "revision_id": revision_id,
        }
        body = report.model_dump(mode="json", exclude_none=True)
        try:
            await self._request("PUT", REPORT, ids, json=body)
        except Conflict:
            return False
        return True

    async def report_url(self, listener_id: Id, deployment_id: Id, url: str) -> None:
        """Tells the control plane the URL the deployment's route exposes."""
        ids = {"listener_id": listener_id, "deployment_id": deployment_id}
        body = RouteReport(url=url).model_dump(mode="json")
        await self._request("PUT", URL, ids, json=body)

    async def deletion_done(self, listener_id: Id, deployment_id: Id) -> None:
        """Tells the control plane the deployment's objects are gone. Already removed
        (404) or not being deleted any more (409) are fine: nothing is left to say."""
        ids = {"listener_id": listener_id, "deployment_id": deployment_id}
        with contextlib.suppress(NotFound, Conflict):
            await self._request("POST", DELETED, ids)


def _ids(listener_id: Id, deployment_id: Id, revision_id: Id) -> dict[str, Id]:
    return {"listener_id": listener_id, "deployment_id": deployment_id, "revision_id": revision_id}
