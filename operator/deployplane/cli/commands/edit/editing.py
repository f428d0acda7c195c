"""Create, update and apply a resource from a file, the same way for every kind.

`Kind` names what differs between deployments and listeners (their file model, how a
name is looked up, the client calls, the plans of `planning`). The file is read and
checked before any request (`read_desired`); then `create`, `update` (PATCH only what
differs from the resource as it is) and `apply` (find by name: create it, or update
it) run in one client session. When nothing differs no PATCH is sent.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from deployplane.api.client import ControlPlaneClient
from deployplane.api.models import Deployment, Listener
from deployplane.cli.commands import resolve
from deployplane.cli.commands.connection import UsageError
from deployplane.cli.commands.edit import planning
from deployplane.cli.commands.edit.bodies import check_fields, field_errors, read_documents

__all__ = [
    "DEPLOYMENT",
    "LISTENER",
    "Applied",
    "Kind",
    "Outcome",
    "apply",
    "create",
    "desired_of",
    "kind_of",
    "read_desired",
    "update",
]

DesiredT = TypeVar("DesiredT", bound=BaseModel)
Client = ControlPlaneClient


class Outcome(StrEnum):
    """What `apply` did, in kubectl's words."""

    created = "created"
    configured = "configured"
    unchanged = "unchanged"


@dataclass(frozen=True)
class Kind(Generic[DesiredT]):
    noun: str
    file_model: type[DesiredT]
    read_model: type[BaseModel]
    name_of: Callable[[DesiredT], str | None]
    resolve: Callable[[Client, str], Awaitable[str]]
    get: Callable[[Client, str], Awaitable[Any]]
    post: Callable[[Client, Any], Awaitable[Any]]
    patch: Callable[[Client, str, Any], Awaitable[Any]]
    to_create: Callable[[DesiredT], BaseModel]
    to_patch: Callable[[Any, DesiredT], BaseModel | None]
    check: Callable[[DesiredT], None] = lambda desired: None


def desired_of(kind: Kind[DesiredT], document: dict[str, Any], name: str) -> DesiredT:
    """One document as the kind's file model, checked strictly; `UsageError` if not."""
    unknown = check_fields(document, [kind.file_model, kind.read_model])
    if unknown:
        raise UsageError(f"{name}: {'; '.join(unknown)}")
    try:
        desired = kind.file_model.model_validate(document)
    except ValidationError as exc:
        raise UsageError(f"{name}: {'; '.join(field_errors(exc, kind.file_model))}") from None
    try:
        kind.check(desired)
    except planning.PlanError as exc:
        raise UsageError(f"{name}: {exc}") from None
    return desired


def read_desired(kind: Kind[DesiredT], source: str) -> list[DesiredT]:
    """Every document of the file as the kind's file model, checked strictly."""
    name = "stdin" if source == "-" else source
    return [desired_of(kind, document, name) for document in read_documents(source)]


def kind_of(document: dict[str, Any]) -> Kind[Any]:
    """A listener file names its compute; anything else is a deployment file."""
    listener_keys = {"compute_id", "computeId", "compute_type", "computeType"}
    return LISTENER if listener_keys & set(document) else DEPLOYMENT


def _planned(kind: Kind[DesiredT], plan: Callable[[], Any], what: str) -> Any:
    try:
        return plan()
    except planning.PlanError as exc:
        raise UsageError(str(exc)) from None
    except ValidationError as exc:
        problems = "; ".join(field_errors(exc, kind.file_model))
        raise UsageError(f"not a valid {kind.noun} to {what}: {problems}") from None


async def create(client: Client, kind: Kind[DesiredT], desired: DesiredT) -> Any:
    body = _planned(kind, lambda: kind.to_create(desired), "create")
    return await kind.post(client, body)


@dataclass(frozen=True)
class Applied:
    """What a file did to one resource."""

    resource: Any
    outcome: Outcome
    previous: Any | None
    """The resource before (None when created)."""


async def update(
    client: Client, kind: Kind[DesiredT], resource_id: str, desired: DesiredT
) -> Applied:
    """PATCH what differs between the resource and `desired` (nothing when nothing does)."""
    current = await kind.get(client, resource_id)
    body = _planned(kind, lambda: kind.to_patch(current, desired), "update")
    if body is None:
        return Applied(current, Outcome.unchanged, current)
    return Applied(await kind.patch(client, resource_id, body), Outcome.configured, current)


async def apply(client: Client, kind: Kind[DesiredT], desired: DesiredT) -> Applied:
    """Create the resource the file names, or update it to the file. A deployment file
    with an agent is found by its agent and environment (its name is the control
    plane's), as `langgraph deploy --agent-id` finds it."""
    agent = getattr(desired, "agent", None)
    if agent is not None:
        found = await client.find_deployment_by_agent(agent.agent_id, agent.environment)
        if found is None:
            return Applied(await create(client, kind, desired), Outcome.created, None)
        return await update(client, kind, str(found.id), desired)
    name = kind.name_of(desired)
    if not name:
        field = "name (or agent)" if kind is DEPLOYMENT else "compute_id"
        raise UsageError(f"{field}: required (apply finds the {kind.noun} by it)")
    try:
        resource_id = await kind.resolve(client, name)
    except resolve.NameNotFound:
        return Applied(await create(client, kind, desired), Outcome.created, None)
    return await update(client, kind, resource_id, desired)


def _check_deployment(desired: planning.DeploymentFile) -> None:
    planning.check_image(desired.source_revision_config)


DEPLOYMENT: Kind[planning.DeploymentFile] = Kind(
    noun="deployment",
    file_model=planning.DeploymentFile,
    read_model=Deployment,
    name_of=lambda d: d.name,
    resolve=resolve.deployment_id,
    get=Client.get_deployment,
    post=Client.create_deployment,
    patch=Client.update_deployment,
    to_create=planning.deployment_create,
    to_patch=planning.deployment_patch,
    check=_check_deployment,
)

LISTENER: Kind[planning.ListenerFile] = Kind(
    noun="listener",
    file_model=planning.ListenerFile,
    read_model=Listener,
    name_of=lambda x: x.compute_id,
    resolve=resolve.listener_id,
    get=Client.get_listener,
    post=Client.create_listener,
    patch=Client.update_listener,
    to_create=planning.listener_create,
    to_patch=planning.listener_patch,
)
