"""What `deployplane demo up` shows while it waits: the example resources' rows (read
from the cluster) and the live table they make, fitted to the terminal."""

from __future__ import annotations

import datetime as dt
from typing import Any

from kubernetes import client
from rich.table import Table

from deployplane.cli.commands.output import FitColumn, fitted_table
from deployplane.crd.specs import GROUP, VERSION

KINDS = (
    ("ControlPlaneConnection", "controlplaneconnections"),
    ("Listener", "listeners"),
    ("AgentDeployment", "agentdeployments"),
)


def rows(api: client.ApiClient, namespace: str) -> list[dict[str, Any]]:
    """One row per example resource of `namespace`: its conditions, revision, id and
    how long it took to be Ready (or has been waiting)."""
    custom = client.CustomObjectsApi(api)
    rows = []
    for kind, plural in KINDS:
        for obj in custom.list_namespaced_custom_object(GROUP, VERSION, namespace, plural)["items"]:
            status = obj.get("status") or {}
            conds = {c["type"]: c for c in status.get("conditions", [])}
            created = dt.datetime.fromisoformat(obj["metadata"]["creationTimestamp"])
            ready = conds.get("Ready", {})
            until = (
                dt.datetime.fromisoformat(ready["lastTransitionTime"])
                if ready.get("status") == "True"
                else dt.datetime.now(dt.UTC)
            )
            rows.append(
                {
                    "elapsed": f"{(until - created).total_seconds():.0f}s",
                    "kind": kind,
                    "name": obj["metadata"]["name"],
                    "ready": conds.get("Ready", {}).get("status", "-"),
                    "synced": conds.get("Synced", {}).get("status", "-"),
                    "revision": (status.get("revision") or {}).get("status", "-"),
                    "id": status.get("deploymentId")
                    or status.get("listenerId")
                    or status.get("url")
                    or "-",
                }
            )
    return rows


# Fits 80 columns with long names: kinds by their kubectl short names, then the id folds,
# then SYNCED and ELAPSED go; a name is never cut.
_SHORT_KIND = {"AgentDeployment": "agd", "Listener": "dpl", "ControlPlaneConnection": "dpconn"}
_COLUMNS = (
    ("kind", FitColumn("KIND")),
    ("name", FitColumn("NAME")),
    ("ready", FitColumn("READY")),
    ("synced", FitColumn("SYNCED", drop=2)),
    ("revision", FitColumn("REVISION")),
    ("elapsed", FitColumn("ELAPSED", drop=3)),
    ("id", FitColumn("ID", drop=1, fold=True)),
)


def table(rows: list[dict[str, Any]], namespace: str, elapsed: float, width: int) -> Table:
    """The live table `demo up` shows, fitted to `width` columns."""
    cells = [
        [
            _SHORT_KIND.get(str(row[key]), str(row[key])) if key == "kind" else str(row[key])
            for key, _ in _COLUMNS
        ]
        for row in rows
    ]
    styles = ["green" if row["ready"] == "True" else "yellow" for row in rows]
    fitted, _ = fitted_table(
        [column for _, column in _COLUMNS],
        cells,
        width,
        row_styles=styles,
        title=f"deployplane demo: namespace {namespace} ({elapsed:.0f}s)",
    )
    return fitted
