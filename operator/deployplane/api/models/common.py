"""What every API model shares: the config that reads snake_case and camelCase, the
source enum, error bodies and the list page.

Why `AliasChoices(snake, camel)` rather than a plain camel alias generator: the API
speaks snake_case and FastAPI renders a model's *validation alias* into the OpenAPI
document, choosing the first of the choices. Putting the snake name first keeps the
API's wire format and OpenAPI exactly as the spec writes them, while the camel name
second lets the very same model read a Kubernetes custom resource's camelCase spec.
Models dump snake_case (no serialization alias); the CRD generator camelizes names.

Fields that the spec already spells in camelCase (Kubernetes shapes inside
`resource_spec`: VolumeMount, Container, volumes) keep those names on both sides
(`deployplane.api.models.deployments`).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Generic, TypeVar

from pydantic import (
    AliasChoices,
    AliasGenerator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    WithJsonSchema,
)

from deployplane.naming import camelize


def _snake_then_camel(name: str) -> AliasChoices:
    return AliasChoices(name, camelize(name))


class ApiModel(BaseModel):
    """Shared config of every API model.

    Unknown fields are ignored: responses stay readable when the service adds fields
    (forward compatible), and requests may carry fields the spec does not show, as
    real clients do.
    """

    model_config = ConfigDict(
        alias_generator=AliasGenerator(validation_alias=_snake_then_camel),
        extra="ignore",
        use_enum_values=False,
        # No JSON body carries an infinite or NaN number; a string such as "1e400"
        # would otherwise be read as one (and stored as null): refused at the field.
        allow_inf_nan=False,
    )


def require_fields(schema: dict[str, Any], *names: str) -> None:
    """Marks fields required in a model's JSON schema (see `Deployment`)."""
    required = schema.setdefault("required", [])
    required.extend(name for name in names if name not in required)


FreeForm = dict[str, Any]
"""An object whose inner structure the spec leaves open; passed through untouched."""


def _ge_as_minimum(schema: dict[str, Any]) -> None:
    # pydantic writes a bound on a union (int | float) as its own keyword ("ge", "le"),
    # which JSON Schema validators and client generators ignore: say it as "minimum"
    # and "maximum".
    if "ge" in schema:
        schema["minimum"] = schema.pop("ge")
    if "le" in schema:
        schema["maximum"] = schema.pop("le")


NonNegativeNumber = Annotated[int | float, Field(ge=0, json_schema_extra=_ge_as_minimum)]
# What the published contract types `integer` (replica counts, megabytes, GiB,
# connections): 1.5 is refused where it is sent, never left for the data plane to fail.
NonNegativeInt = Annotated[int, Field(ge=0)]
# The published bounds of the app's, the queue's and Redis's CPU (cores).
CpuRequest = Annotated[int | float, Field(ge=0.1, le=8.0, json_schema_extra=_ge_as_minimum)]
CpuLimit = Annotated[int | float, Field(ge=0.1, le=16.0, json_schema_extra=_ge_as_minimum)]

# Longest deployment name (and listener compute_id): a Kubernetes object name (DNS
# subdomain, 253), as the AgentDeployment's spec.name and metadata.name it defaults to.
NAME_MAX_LENGTH = 253


class Source(StrEnum):
    """Where a deployment's code comes from.

    The two `internal_*` sources are what the vendor's own CLI (`langgraph deploy`)
    creates: `internal_source` uploads a source tarball the service builds,
    `internal_docker` pushes a built image to the service's registry. The operator
    manages only `git_host` and `external_docker` (`MANAGED_SOURCES`)."""

    GIT_HOST = "git_host"
    EXTERNAL_DOCKER = "external_docker"
    INTERNAL_DOCKER = "internal_docker"
    INTERNAL_SOURCE = "internal_source"


# The sources the operator's AgentDeployment may name (its CRD's enum).
MANAGED_SOURCES = (Source.GIT_HOST, Source.EXTERNAL_DOCKER)


# Every source value the published contract names: the service may answer any of them.
PUBLISHED_SOURCES = tuple(source.value for source in Source)


ReportedSource = Annotated[
    Source | str,
    Field(union_mode="left_to_right"),
    WithJsonSchema({"type": "string", "enum": list(PUBLISHED_SOURCES)}),
]
"""A source as the service reports it: a `Source` when known, else the raw string
(kept, not refused: another source in one resource must not fail a list page)."""


def or_unknown(enum: type[StrEnum]) -> Any:
    """A before-validator: a status this client does not know reads as UNKNOWN, so a new
    status in one resource never fails a whole list page."""

    def convert(value: Any) -> Any:
        if isinstance(value, str) and value not in enum.__members__.values():
            return enum("UNKNOWN")
        return value

    return BeforeValidator(convert)


# ------------------------------------------------------------------------ errors


class ValidationErrorEntry(ApiModel):
    """One entry of a 422 body."""

    loc: list[str | int]
    msg: str
    type: str


class HTTPValidationError(ApiModel):
    """A 422 body."""

    detail: list[ValidationErrorEntry]


class NotFoundBody(ApiModel):
    """A 404 body, e.g. `{"detail": "Deployment ID <id> not found."}`."""

    detail: str


class ErrorBody(ApiModel):
    """A 400 (or 403, 409) body: `{"detail": "<one sentence>"}`."""

    detail: str


# -------------------------------------------------------------------- pagination

ItemT = TypeVar("ItemT", bound=BaseModel)


class Page(ApiModel, Generic[ItemT]):
    """A list body: `{"resources": [...], "offset": N}`.

    `offset` is always an integer (required in the OpenAPI document): where the next
    page starts (the request's offset plus the number of resources returned). A page
    shorter than the limit is the last. Read leniently (a missing one is None, and the
    client then counts the resources itself) so that one odd body never fails a list.
    """

    resources: list[ItemT]
    offset: int | None = None

    model_config = ConfigDict(json_schema_extra=lambda schema: require_fields(schema, "offset"))
