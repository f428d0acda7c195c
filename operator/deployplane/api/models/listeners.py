"""Listeners: the compute infrastructure deployments run on."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from uuid import UUID

from pydantic import ConfigDict, Field

from deployplane.api.models.common import NAME_MAX_LENGTH, ApiModel, require_fields


class ComputeType(StrEnum):
    """Kinds of compute infrastructure a listener can represent."""

    K8S = "k8s"


class ComputeConfig(ApiModel):
    """Compute-type specific settings; for `k8s`, the namespaces it serves.

    Fields beyond `k8s_namespaces` are not described by the spec and are kept as given.
    """

    model_config = ConfigDict(extra="allow")

    k8s_namespaces: list[str] | None = Field(None, description="Namespaces the listener serves.")


class ListenerCreate(ApiModel):
    """Body of POST /v2/listeners."""

    compute_type: ComputeType = Field(description="Kind of compute; immutable.")
    compute_id: str = Field(
        min_length=1,
        max_length=NAME_MAX_LENGTH,
        description="Unique id of the compute; immutable.",
    )
    # Required, as published (`{}` says nothing): the emulator refuses a create
    # without one, so deployplane never depends on one being made up for it.
    compute_config: ComputeConfig = Field(description="Compute settings; {} for none.")
    version: str | None = None


class ListenerPatch(ApiModel):
    """Body of PATCH /v2/listeners/{id}: only `version` and `compute_config` may change."""

    version: str | None = None
    compute_config: ComputeConfig | None = None


class ListenerPut(ApiModel):
    """Body of PUT /v2/listeners/{id} (an emulator extension): the whole listener;
    immutables must match; no compute_config replaces it with an empty one."""

    compute_type: ComputeType = Field(description="Kind of compute; immutable.")
    compute_id: str = Field(
        min_length=1, max_length=NAME_MAX_LENGTH, description="Unique id of the compute."
    )
    compute_config: ComputeConfig | None = None
    version: str | None = None


class Listener(ApiModel):
    """A listener as the service returns it."""

    id: UUID
    compute_type: ComputeType
    compute_id: str
    compute_config: ComputeConfig | None = None

    model_config = ConfigDict(
        json_schema_extra=lambda schema: require_fields(schema, "compute_config")
    )
    version: str | None = None
    created_at: datetime
    updated_at: datetime
