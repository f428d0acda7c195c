"""What a PATCH of a deployment does, decided without a database.

`decide_patch(current, body, ...)` says what the PATCH changes, whether it makes a new
revision and what is refused; `store.deploymentpatch` reads `current`, looks up the one
thing a pure function cannot (whether a named listener exists) and writes the decision.
Kept beside `validation.py` so the rules are unit-tested directly
(tests/unit/emulator/rules/test_patch_decision.py).

The rules, as the service answers them:
- name, source and agent cannot change (422); a deployment being deleted cannot be patched (400);
- `source_config` keys present replace the stored values, an explicit null clears one,
  nested objects are replaced whole; a change alone makes no revision, but a change of
  what the data plane renders from (`RENDERED_SOURCE_CONFIG`: resource_spec,
  listener_config, listener_id) must reach what runs: on a deployed latest revision it
  asks for a re-render (`PatchDecision.rerender`: the running revision becomes
  `remote_reconciled=false` until the data plane applied the change), a latest revision
  still on its way deploys with it, and a latest revision that ended without deploying
  (failed, skipped, interrupted: nothing of it runs) is retried by a new revision with
  its source revision config (`PatchDecision.retry`); an equal value asks nothing;
- a non-null `source_revision_config` field makes a new revision (nulls are ignored);
- `secrets` replace the stored set; a change of a name or value makes a new revision;
- `secret_references` replace the stored ones; a change makes a new revision;
- a git_host PATCH naming `repo_url` or `integration_id` has its repository checked;
- `revision_source` (the vendor CLI's) says where the new revision comes from: an
  internal_* deployment's revisions may be built from an upload (internal_source) or
  run a pushed image (internal_docker); each such revision is whole, so its source
  revision config is the PATCH's alone (nothing carried over from the previous one),
  and its `source_tarball_path` must name an upload of the deployment.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from deployplane.api.models import (
    DeploymentAgent,
    DeploymentPatch,
    DeploymentStatus,
    RevisionStatus,
    Source,
    SourceConfig,
    SourceRevisionConfig,
)
from deployplane.emulator.errors import InvalidError, RefusedError, invalid
from deployplane.emulator.rules import secretdigest
from deployplane.emulator.rules.validation import (
    INTERNAL_SOURCES,
    deployment_errors,
    published_rule_errors,
    revision_source_errors,
    secret_errors,
)
from deployplane.emulator.settings import WorkspaceConfig

__all__ = ["RENDERED_SOURCE_CONFIG", "PatchDecision", "StoredDeployment", "decide_patch"]

RENDERED_SOURCE_CONFIG = ("resource_spec", "listener_config", "listener_id")
"""The `source_config` keys the data plane renders the workloads from
(`dataplane/render/`): a change of one must reach what runs (docs/emulator.md)."""


@dataclass(frozen=True)
class StoredDeployment:
    """What a PATCH is decided against: the stored deployment and the source revision
    config of its latest revision."""

    id: uuid.UUID
    name: str
    source: Source
    status: str
    source_config: dict[str, Any]
    secrets: list[dict[str, str]]
    secret_references: list[dict[str, str]] | None
    revision_config: SourceRevisionConfig
    revision_source: Source | None = None
    """The latest revision's source (None: as the deployment's, or no revision yet)."""
    revision_status: RevisionStatus | None = None
    """The latest revision's status (None: no revision yet)."""
    agent: DeploymentAgent | None = None
    """The agent it was created for (None: created by name)."""


@dataclass(frozen=True)
class PatchDecision:
    """The outcome of a PATCH that is not refused outright."""

    values: dict[str, Any]
    """The deployment's column updates (without `updated_at` and the new revision id)."""
    source_config: SourceConfig
    """The merged source_config."""
    revision_config: SourceRevisionConfig
    """The source revision config a new revision gets."""
    new_revision: bool
    errors: list[dict[str, Any]]
    """What is wrong (422), besides an unknown listener: that takes a lookup."""
    listener_to_check: uuid.UUID | None
    """The listener the PATCH names, which must exist (also when it is the current one,
    whose listener may be gone: deleted before the in-use check existed)."""
    check_repository: bool
    """Whether the git_host repository must be checked against its integration."""
    revision_source: Source
    """Where the new revision (if any) comes from."""
    upload_to_check: str | None
    """The source_tarball_path the new revision builds: an upload of this deployment."""
    rerender: bool = False
    """No new revision, but a rendered field of a deployed latest revision changed: the
    data plane must apply the change to the running revision (it is marked not
    `remote_reconciled`). A revision still on its way needs nothing: it is rendered from
    the deployment as it is when it deploys."""
    retry: bool = False
    """The new revision is the latest one again, with the change: that one ended without
    deploying, so nothing runs that a re-render could change (a git_host retry keeps the
    commit it built, as a redeploy does)."""


def decide_patch(
    current: StoredDeployment,
    body: DeploymentPatch,
    *,
    workspace: WorkspaceConfig,
    secret_key: bytes,
) -> PatchDecision:
    """Raises `InvalidError` for a name or source change, `RefusedError` for a deployment
    being deleted; else the decision, whose `errors` the caller raises."""
    _refuse_outright(current, body)
    stored_config = merged_source_config(current.source_config, body)
    source_config = SourceConfig.model_validate(stored_config)
    revision_config, new_revision = _revision_config(
        current.revision_config, body, whole=current.source in INTERNAL_SOURCES
    )
    errors = revision_source_errors(current.source, body.revision_source)
    # a refused revision_source is not validated against: the one error says it all
    given_source = None if errors else body.revision_source
    revision_source = given_source or current.revision_source or current.source
    values: dict[str, Any] = {"source_config": stored_config, "secrets": current.secrets}
    references = references_update(body, current.secret_references)
    values.update(references)
    new_revision = new_revision or bool(references)
    if body.secrets is not None:
        errors += secret_errors(body.secrets, ("body", "secrets"))
        new_revision |= secretdigest.changed(secret_key, current.id, body.secrets, current.secrets)
        # the given values' records: the same ones when no value changed
        values["secrets"] = secretdigest.records(secret_key, current.id, body.secrets)
    errors += published_rule_errors(
        current.source, body.source_config, body.secret_references, current=current.source_config
    )
    errors += deployment_errors(
        source=current.source,
        source_config=source_config,
        revision_config=revision_config,
        workspace=workspace,
        revision_source=revision_source,
    )
    named = body.source_config.model_fields_set if body.source_config is not None else set()
    retry, rerender = _reaching_what_runs(current, stored_config, new_revision=new_revision)
    new_revision = new_revision or retry
    return PatchDecision(
        values=values,
        source_config=source_config,
        revision_config=revision_config,
        new_revision=new_revision,
        errors=errors,
        listener_to_check=source_config.listener_id if "listener_id" in named else None,
        check_repository=(
            current.source is Source.GIT_HOST and bool({"repo_url", "integration_id"} & named)
        ),
        revision_source=revision_source,
        upload_to_check=(
            revision_config.source_tarball_path
            if new_revision and revision_source is Source.INTERNAL_SOURCE
            else None
        ),
        rerender=rerender,
        retry=retry,
    )


def _reaching_what_runs(
    current: StoredDeployment, stored_config: dict[str, Any], *, new_revision: bool
) -> tuple[bool, bool]:
    """(retry, rerender): how a change of what the data plane renders, in a PATCH that
    makes no revision of its own, reaches what runs. A deployed latest revision is
    rendered again; one that ended without deploying runs nothing, so a new revision
    retries it; one on its way needs neither (it deploys with the change)."""
    if new_revision or not rendered_change(current.source_config, stored_config):
        return False, False
    status = current.revision_status
    if status is RevisionStatus.DEPLOYED:
        return False, True
    return status is not None and status.is_terminal, False


def rendered_change(stored: dict[str, Any], merged: dict[str, Any]) -> bool:
    """Whether `merged` differs from `stored` in what the data plane renders from,
    compared as the model reads them (an explicit null and an absent key are alike)."""
    return _rendered(stored) != _rendered(merged)


def _rendered(config: dict[str, Any]) -> dict[str, Any] | None:
    try:
        model = SourceConfig.model_validate(config)
    except ValueError:  # a stored config the model no longer reads: counts as changed
        return None
    return model.model_dump(mode="json", exclude_none=True, include=set(RENDERED_SOURCE_CONFIG))


def _refuse_outright(current: StoredDeployment, body: DeploymentPatch) -> None:
    errors: list[dict[str, Any]] = []
    if body.name is not None and body.name != current.name:
        errors.append(invalid(("body", "name"), "name cannot be changed after creation"))
    if body.source is not None and body.source is not current.source:
        errors.append(invalid(("body", "source"), "source cannot be changed after creation"))
    if body.agent is not None and body.agent != current.agent:
        errors.append(invalid(("body", "agent"), "agent cannot be changed after creation"))
    if errors:
        raise InvalidError(errors)
    if current.status == DeploymentStatus.AWAITING_DELETE.value:
        raise RefusedError(f"Deployment ID {current.id} is being deleted.")


def merged_source_config(stored: dict[str, Any], body: DeploymentPatch) -> dict[str, Any]:
    """The stored source_config with the PATCH's keys: present ones replace (nested
    objects whole), an explicit null clears."""
    merged = dict(stored)
    if body.source_config is not None:
        patch = body.source_config
        dumped = patch.model_dump(mode="json", exclude_none=True)
        for key in patch.model_fields_set:
            if key in dumped:
                merged[key] = dumped[key]
            else:
                merged.pop(key, None)
    return merged


def _revision_config(
    current: SourceRevisionConfig, body: DeploymentPatch, *, whole: bool
) -> tuple[SourceRevisionConfig, bool]:
    """The new source revision config, and whether the PATCH gave any of it. `whole`:
    a given config replaces the current one (an internal_* revision is an upload or an
    image, never half of each)."""
    values = current.model_dump()
    given = {
        key: value
        for key, value in (
            body.source_revision_config.model_dump() if body.source_revision_config else {}
        ).items()
        if value is not None  # nulls are ignored; a non-null value makes a revision
    }
    if whole and given:
        return SourceRevisionConfig(**given), True
    values.update(given)
    return SourceRevisionConfig(**values), bool(given)


def references_update(body: DeploymentPatch, stored: list[dict[str, str]] | None) -> dict[str, Any]:
    """The column update of a PATCH's `secret_references`, {} when unchanged; a change
    changes the environment, so it takes a new revision to apply."""
    if body.secret_references is None:
        return {}
    given = [item.model_dump() for item in body.secret_references]
    return {} if given == stored else {"secret_references": given}
