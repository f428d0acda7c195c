"""A watched body -> the `Managed` snapshot the reconciler sees: the spec through the
kind's pydantic model, the status through its status model. A spec the model refuses
is told in the user's words (`spec_error_message`: the field in camelCase, as the
custom resource is written), for the pass to stall on."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from deployplane.naming import camelize
from deployplane.reconcile.external import Managed, SpecT
from deployplane.reconcile.marker import CreatePending
from deployplane.reconcile.status import StatusT


def to_managed(
    spec_model: type[SpecT],
    status_model: type[StatusT],
    body: Mapping[str, Any],
    status: Mapping[str, Any],
    create_pending: CreatePending | None = None,
) -> Managed[SpecT, StatusT]:
    meta = body.get("metadata") or {}
    return Managed(
        namespace=meta["namespace"],
        name=meta["name"],
        uid=meta.get("uid", ""),
        generation=int(meta.get("generation") or 0),
        spec=spec_model.model_validate(dict(body.get("spec") or {})),
        status=status_model.model_validate(dict(status)),
        resource_version=meta.get("resourceVersion"),
        create_pending=create_pending,
    )


def spec_error_message(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        # A missing field is reported under its first alias (snake_case); the user wrote
        # the custom resource in camelCase, so name the field as they would write it.
        loc = ".".join(camelize(p) if isinstance(p, str) else str(p) for p in err["loc"])
        parts.append(f"spec.{loc}: {err['msg']}")
    return "; ".join(parts)
