"""What `create`, `update` and `apply` send for a file: pure functions, no requests.

A file may be the output of `get -o yaml`, so it carries what the service sets:
top-level read-only fields (ignored by the file models), `repo_commit_sha`, a git_host
`custom_url`, and secrets by name only (values are write-only). A PATCH is planned
against the resource as it is, field by field, and holds only what differs, because:

- a non-null `source_revision_config` field makes a new revision even when equal, so
  an unchanged image must not be sent;
- `secrets` replace the whole set and their values cannot be read back: names only
  that match the current names mean "keep them"; any other change needs every value;
- nothing differing means no request at all (`None`), so `get -o yaml | update -f -`
  and a repeated `apply -f` change nothing.

Refusals are `PlanError`s (one line, exit 2): changing what cannot change, a secret
without its value where one is needed, an image no registry could pull.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from deployplane.api.imageref import image_reference_error
from deployplane.api.models import (
    Deployment,
    DeploymentAgent,
    DeploymentCreate,
    DeploymentPatch,
    Listener,
    ListenerCreate,
    ListenerPatch,
    SecretReference,
    Source,
    SourceConfig,
    SourceRevisionConfig,
)
from deployplane.api.models.common import NAME_MAX_LENGTH, ApiModel
from deployplane.api.models.listeners import ComputeConfig, ComputeType

__all__ = [
    "DeploymentFile",
    "ListenerFile",
    "PlanError",
    "check_image",
    "deployment_create",
    "deployment_patch",
    "for_agent",
    "listener_create",
    "listener_patch",
]


class PlanError(Exception):
    """A file that cannot be applied as it is: its one-line reason."""


class FileSecret(ApiModel):
    """A secret in a file: with its value, or by name only (as `get` shows it)."""

    name: str = Field(description="Secret name.")
    value: str | None = Field(None, description="Secret value; omit to keep it as is.")

    def __repr__(self) -> str:
        return f"FileSecret(name={self.name!r}, value=<redacted>)"


class DeploymentFile(ApiModel):
    """A deployment file: the create body with every field optional and secrets by
    name allowed; the read-only fields of `Deployment` are ignored. With an `agent`, the
    name is the control plane's (read-only, as `get` shows it)."""

    name: str | None = Field(None, min_length=1, max_length=NAME_MAX_LENGTH)
    agent: DeploymentAgent | None = None
    source: Source | None = None
    source_config: SourceConfig | None = None
    source_revision_config: SourceRevisionConfig | None = None
    secrets: list[FileSecret] | None = None
    secret_references: list[SecretReference] | None = None


class ListenerFile(ApiModel):
    """A listener file: the create body with every field optional."""

    compute_type: ComputeType | None = None
    compute_id: str | None = Field(None, min_length=1, max_length=NAME_MAX_LENGTH)
    compute_config: ComputeConfig | None = None
    version: str | None = None


def _json(value: Any) -> Any:
    """A comparable form: JSON types, without nulls (null and absent mean the same)."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, dict):
        pruned = {k: _json(v) for k, v in value.items() if v is not None}
        return {k: v for k, v in pruned.items() if v not in ({}, [])}
    if isinstance(value, list):
        return [_json(v) for v in value]
    return value


def check_image(config: SourceRevisionConfig | None) -> None:
    if config is not None and config.image_uri:
        reason = image_reference_error(config.image_uri)
        if reason is not None:
            raise PlanError(f"source_revision_config.image_uri: not a valid image ({reason})")


def _dump_set(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode="json", exclude_unset=True)


def _source_config(desired: DeploymentFile, source: Source | str | None) -> dict[str, Any]:
    given = _dump_set(desired.source_config) if desired.source_config else {}
    if source == Source.GIT_HOST:
        given.pop("custom_url", None)  # set by the service for git_host (read-only)
    return given


def for_agent(desired: DeploymentFile, agent: DeploymentAgent) -> DeploymentFile:
    """The file, made for `agent` (`create --agent-id --agent-environment`): a file
    naming another agent, or naming the deployment itself (a by-name file), is refused
    rather than turned into something else."""
    if desired.agent is not None and desired.agent != agent:
        raise PlanError(
            "agent: the file names another agent or environment than --agent-id and "
            "--agent-environment"
        )
    if desired.agent is None and desired.name is not None:
        raise PlanError(
            "name: not with --agent-id (the control plane names the deployment of an "
            "agent); remove it from the file"
        )
    return desired.model_copy(update={"agent": agent})


def deployment_create(desired: DeploymentFile) -> DeploymentCreate:
    """The POST body of a file (the file must name its secrets' values). A file with an
    agent sends the agent and not its name: the control plane names such a deployment
    (a file from `get -o yaml` shows the name it gave)."""
    check_image(desired.source_revision_config)
    for index, secret in enumerate(desired.secrets or []):
        if secret.value is None:
            raise PlanError(f"secrets.{index}.value: required to create (values are write-only)")
    body = _dump_set(desired)
    if desired.agent is not None:
        body["agent"] = desired.agent.model_dump(mode="json")
        body.pop("name", None)
    if desired.source_config is not None:
        body["source_config"] = _source_config(desired, desired.source)
    return DeploymentCreate.model_validate(body)


def _secrets_change(desired: list[FileSecret], current: Deployment) -> list[dict[str, Any]] | None:
    names = [s.name for s in current.secrets or []]
    without = [i for i, s in enumerate(desired) if s.value is None]
    if len(without) == len(desired):  # names only, as `get` prints them
        if sorted(s.name for s in desired) == sorted(names):
            return None
        raise PlanError(
            "secrets: to add or remove a secret give every secret with its value "
            "(a change replaces them all; names alone keep them as they are)"
        )
    if without:
        raise PlanError(
            f"secrets.{without[0]}.value: required, as other secrets change "
            "(a change replaces them all)"
        )
    # Values cannot be read back to compare: sent, and the service makes no revision
    # when they are unchanged.
    return [s.model_dump(mode="json") for s in desired]


def deployment_patch(current: Deployment, desired: DeploymentFile) -> DeploymentPatch | None:
    """The PATCH that makes `current` what `desired` says; None when nothing differs."""
    check_image(desired.source_revision_config)
    if desired.name is not None and desired.name != current.name:
        raise PlanError(f"name: cannot change (the deployment is named {current.name!r})")
    if desired.source is not None and desired.source != current.source:
        raise PlanError(f"source: cannot change (the deployment's source is {current.source})")
    if desired.agent is not None and desired.agent != current.agent:
        raise PlanError(f"agent: cannot change (the deployment's is {_agent_text(current)})")
    body: dict[str, Any] = {}
    have_config = current.source_config.model_dump(mode="json") if current.source_config else {}
    config = {
        key: value
        for key, value in _source_config(desired, current.source).items()
        if _json(value) != _json(have_config.get(key))
    }
    if config:
        body["source_config"] = config
    if desired.source_revision_config is not None:
        have = current.source_revision_config
        revision = {
            key: value
            for key, value in _dump_set(desired.source_revision_config).items()
            if value is not None and (have is None or value != getattr(have, key))
        }
        if revision:
            body["source_revision_config"] = revision
    if desired.secrets is not None:
        secrets = _secrets_change(desired.secrets, current)
        if secrets is not None:
            body["secrets"] = secrets
    if desired.secret_references is not None and _json(desired.secret_references) != _json(
        current.secret_references or []
    ):
        body["secret_references"] = [r.model_dump(mode="json") for r in desired.secret_references]
    return DeploymentPatch.model_validate(body) if body else None


def _agent_text(deployment: Deployment) -> str:
    agent = deployment.agent
    if agent is None:
        return "none: it was created by name"
    return f"{agent.agent_id!r} in {agent.environment.value}"


def listener_create(desired: ListenerFile) -> ListenerCreate:
    """The POST body of a listener file (`compute_config`, which the published create
    requires, is `{}` when the file has none)."""
    body = _dump_set(desired)
    if body.get("compute_config") is None:
        body["compute_config"] = {}
    return ListenerCreate.model_validate(body)


def listener_patch(current: Listener, desired: ListenerFile) -> ListenerPatch | None:
    """The PATCH that makes `current` what `desired` says; None when nothing differs."""
    for field in ("compute_type", "compute_id"):
        wanted, have = getattr(desired, field), getattr(current, field)
        if wanted is not None and wanted != have:
            raise PlanError(f"{field}: cannot change (the listener's is {have})")
    body: dict[str, Any] = {}
    if desired.version is not None and desired.version != current.version:
        body["version"] = desired.version
    if desired.compute_config is not None and _json(desired.compute_config) != _json(
        current.compute_config
    ):
        body["compute_config"] = _dump_set(desired.compute_config)
    return ListenerPatch.model_validate(body) if body else None
