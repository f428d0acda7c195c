"""`kubectl get` columns (`additionalPrinterColumns`) shared by every kind.

Every kind shows Ready and Synced first and Age last, as Kubernetes' own kinds end
with AGE; a kind names only the columns between them (`printer_columns(...)`).
"""

from __future__ import annotations

from typing import Final

from deployplane.crd.openapi import Schema

__all__ = ["column", "printer_columns"]


def column(name: str, json_path: str, description: str, *, priority: int | None = None) -> Schema:
    """A string column; priority 1 shows it only with `-o wide`."""
    out: Schema = {
        "name": name,
        "type": "string",
        "description": description,
        "jsonPath": json_path,
    }
    if priority is not None:
        out["priority"] = priority
    return out


def policy_column() -> Schema:
    """spec.managementPolicy, in `-o wide`: every kind with that field shows it alike."""
    return column(
        "Policy",
        ".spec.managementPolicy",
        "Full, or ObserveOnly (never changed on the control plane).",
        priority=1,
    )


def connection_column() -> Schema:
    """spec.connectionRef, in `-o wide`: every kind that names a connection shows it."""
    return column(
        "Connection",
        ".spec.connectionRef.name",
        "The ControlPlaneConnection it uses (empty: its namespace's default, else the operator's).",
        priority=1,
    )


def _condition_column(condition: str) -> Schema:
    return column(
        condition,
        f'.status.conditions[?(@.type=="{condition}")].status',
        f"Status of the {condition} condition.",
    )


_AGE_COLUMN: Final[Schema] = {
    "name": "Age",
    "type": "date",
    "jsonPath": ".metadata.creationTimestamp",
}


def printer_columns(*kind_columns: Schema) -> tuple[Schema, ...]:
    """Ready, Synced, the kind's own columns, Age."""
    return (
        _condition_column("Ready"),
        _condition_column("Synced"),
        *kind_columns,
        dict(_AGE_COLUMN),
    )
