"""Per-source rules of a deployment that a JSON schema alone cannot state.

Pure functions over the API models, so they are unit-tested without a database.
Each refusal names the offending field by its `loc`, as in HTTPValidationError.
"""

from __future__ import annotations

from typing import Any

from deployplane.api.imageref import image_reference_error
from deployplane.api.models import (
    Secret,
    SecretReference,
    Source,
    SourceConfig,
    SourceRevisionConfig,
)
from deployplane.emulator.errors import RefusedError, invalid
from deployplane.emulator.settings import WorkspaceConfig

__all__ = [
    "INTERNAL_SOURCES",
    "NUL_MESSAGE",
    "TAG_PREFIX",
    "check_repository",
    "deployment_errors",
    "published_rule_errors",
    "ref_format_error",
    "repo_url_error",
    "revision_source_errors",
    "secret_errors",
    "source_allowed",
    "unknown_listener",
]

TAG_PREFIX = "refs/tags/"

_GIT_CONFIG_FIELDS = ("integration_id", "repo_url", "build_on_push")
_GIT_REVISION_FIELDS = ("repo_ref", "graph_config_path")
_BUILD_FIELDS = ("source_tarball_path", "langgraph_config_path")
_SC = ("body", "source_config")
_RC = ("body", "source_revision_config")

# The vendor CLI's sources (`langgraph deploy`): a tarball the service builds, or an
# image pushed to the service's registry. Either may follow the other on one
# deployment (`revision_source` of a PATCH), as the CLI builds locally or remotely.
INTERNAL_SOURCES = frozenset({Source.INTERNAL_SOURCE, Source.INTERNAL_DOCKER})


# PostgreSQL's text type cannot hold U+0000, so the emulator refuses it in every request
# on every database alike (SQLite would store it, and the two would answer differently):
# in bodies `jsonguard`, in query parameters `deps.refuse_nul_in_query`.
NUL_MESSAGE = "must not contain the NUL character (U+0000)"


_REF_FORBIDDEN = frozenset(" ~^:?*[\\")


def ref_format_error(ref: str) -> str | None:
    """Why `ref` is not a valid git ref name, by git's own rules (git-check-ref-format,
    with --allow-onelevel, as a bare branch name such as `main` is allowed); None if valid.

    The reasons name the rule, never the value."""
    if not ref:
        return "must not be empty"
    if ref == "@":
        return "must not be the single character @"
    if ref.startswith("-"):
        return "must not begin with -"
    if any(ord(c) < 0x20 or ord(c) == 0x7F or c in _REF_FORBIDDEN for c in ref):
        return "must not contain control characters, space, ~ ^ : ? * [ or backslash"
    if ".." in ref:
        return "must not contain .."
    if "@{" in ref:
        return "must not contain @{"
    if ref.startswith("/") or ref.endswith("/") or "//" in ref:
        return "must not begin or end with / nor contain //"
    if ref.endswith("."):
        return "must not end with ."
    for component in ref.split("/"):
        if component.startswith("."):
            return "no /-separated component may begin with ."
        if component.endswith(".lock"):
            return "no /-separated component may end with .lock"
    return None


def repo_url_error(source_config: SourceConfig, workspace: WorkspaceConfig) -> str | None:
    """Why `repo_url` is not a repository of its integration's listing; None if it is
    (or if the integration is unknown or either is missing: `deployment_errors` says so).
    Answered 400: the request is well-formed, the repository is just not there."""
    integration_id, repo_url = source_config.integration_id, source_config.repo_url
    for integration in workspace.integrations:
        if integration.id == integration_id and repo_url:
            if any(repo.url == repo_url for repo in integration.repositories):
                return None
            return (
                "source_config.repo_url is not a repository of git-host integration "
                f"{integration_id} (see GET /v1/integrations/git_host/{integration_id}/repos)."
            )
    return None


def source_allowed(mode: str, source: Source) -> bool:
    """`saas` workspaces deploy from git or the vendor CLI's uploads and pushes (the
    service builds and hosts them), `self_hosted` ones from their own images only."""
    if mode == "saas":
        return source is not Source.EXTERNAL_DOCKER
    if mode == "self_hosted":
        return source is Source.EXTERNAL_DOCKER
    return True


def deployment_errors(
    *,
    source: Source,
    source_config: SourceConfig,
    revision_config: SourceRevisionConfig,
    workspace: WorkspaceConfig,
    revision_source: Source | None = None,
    empty_allowed: bool = False,
) -> list[dict[str, Any]]:
    """Everything wrong with a deployment's (merged) configuration, [] when valid.

    `revision_source`: where the revision being made comes from (default `source`);
    `empty_allowed`: an internal_* create, which may come without a revision."""
    errors: list[dict[str, Any]] = []
    if not source_allowed(workspace.mode, source):
        errors.append(
            invalid(("body", "source"), f"source {source.value} is not available in this workspace")
        )
    if source is Source.GIT_HOST:
        errors += _git_host_errors(source_config, revision_config, workspace)
    elif source is Source.EXTERNAL_DOCKER:
        errors += _external_docker_errors(source_config, revision_config)
    else:
        errors += _internal_errors(
            revision_source or source, source_config, revision_config, empty_allowed
        )
    return errors


def revision_source_errors(source: Source, revision_source: Source | None) -> list[dict[str, Any]]:
    """A PATCH's `revision_source` must suit the deployment: internal_source or
    internal_docker for an internal_* deployment, else its own source."""
    if revision_source is None or revision_source is source:
        return []
    if source in INTERNAL_SOURCES and revision_source in INTERNAL_SOURCES:
        return []
    return [
        invalid(
            ("body", "revision_source"),
            f"revision_source {revision_source.value} is not allowed for source {source.value}",
        )
    ]


def _internal_errors(
    revision_source: Source,
    source_config: SourceConfig,
    revision_config: SourceRevisionConfig,
    empty_allowed: bool,
) -> list[dict[str, Any]]:
    errors = [
        invalid((*_SC, field), f"{field} is not allowed for source {revision_source.value}")
        for field in _GIT_CONFIG_FIELDS
        if getattr(source_config, field) is not None
    ]
    errors += [
        invalid((*_RC, field), f"{field} is not allowed for source {revision_source.value}")
        for field in _GIT_REVISION_FIELDS
        if getattr(revision_config, field) is not None
    ]
    if empty_allowed and not revision_config.model_dump(exclude_none=True):
        return errors
    if revision_source is Source.INTERNAL_SOURCE:
        required: tuple[str, ...] = _BUILD_FIELDS
    else:
        required = ("image_uri",)
        errors += [
            invalid((*_RC, field), f"{field} is not allowed for source internal_docker")
            for field in _BUILD_FIELDS
            if getattr(revision_config, field) is not None
        ]
    for field in required:
        if not getattr(revision_config, field):
            errors.append(
                invalid(
                    (*_RC, field), f"Field required for source {revision_source.value}", "missing"
                )
            )
    return errors


def _git_host_errors(
    source_config: SourceConfig, revision_config: SourceRevisionConfig, workspace: WorkspaceConfig
) -> list[dict[str, Any]]:
    errors: list[dict[str, Any]] = []
    required = (
        (_SC, "integration_id", source_config.integration_id),
        (_SC, "repo_url", source_config.repo_url),
        (_RC, "repo_ref", revision_config.repo_ref),
        (_RC, "graph_config_path", revision_config.graph_config_path),
    )
    for prefix, field, value in required:
        if value is None or value == "":
            errors.append(
                invalid((*prefix, field), "Field required for source git_host", "missing")
            )
    for field in ("image_uri", *_BUILD_FIELDS):
        if getattr(revision_config, field) is not None:
            errors.append(invalid((*_RC, field), f"{field} is not allowed for source git_host"))
    integration_id = source_config.integration_id
    if integration_id is not None and all(
        integration.id != integration_id for integration in workspace.integrations
    ):
        errors.append(
            invalid((*_SC, "integration_id"), "unknown git-host integration in this workspace")
        )
    repo_ref = revision_config.repo_ref
    ref_error = ref_format_error(repo_ref) if repo_ref else None
    if ref_error is not None:
        errors.append(invalid((*_RC, "repo_ref"), f"not a valid git ref: {ref_error}"))
    if (
        source_config.build_on_push is True
        and repo_ref is not None
        and repo_ref.startswith(TAG_PREFIX)
    ):
        errors.append(
            invalid((*_SC, "build_on_push"), "build_on_push must be false when repo_ref is a tag")
        )
    return errors


def _external_docker_errors(
    source_config: SourceConfig, revision_config: SourceRevisionConfig
) -> list[dict[str, Any]]:
    errors: list[dict[str, Any]] = []
    image_uri = revision_config.image_uri
    if not image_uri:
        errors.append(
            invalid((*_RC, "image_uri"), "Field required for source external_docker", "missing")
        )
    elif (reason := image_reference_error(image_uri)) is not None:
        # A registry would never pull it: refused here rather than failing at deploy.
        errors.append(invalid((*_RC, "image_uri"), f"not a valid image reference: {reason}"))
    for prefix, fields, config in (
        (_SC, _GIT_CONFIG_FIELDS, source_config),
        (_RC, _GIT_REVISION_FIELDS + _BUILD_FIELDS, revision_config),
    ):
        for field in fields:
            if getattr(config, field) is not None:
                errors.append(
                    invalid((*prefix, field), f"{field} is not allowed for source external_docker")
                )
    return errors


def secret_errors(given: list[Secret], prefix: tuple[str, ...]) -> list[dict[str, Any]]:
    """A secret name given twice."""
    seen: set[str] = set()
    errors = []
    for index, secret in enumerate(given):
        if secret.name in seen:
            errors.append(invalid((*prefix, index, "name"), "duplicate secret name"))
        seen.add(secret.name)
    return errors


def published_rule_errors(
    source: Source,
    config: SourceConfig | None,
    references: list[SecretReference] | None,
    *,
    current: dict[str, Any] | None,
) -> list[dict[str, Any]]:
    """The published rules of deployment_type, custom_url and secret_references, for a
    create (`current` None) or a PATCH (`current` the stored source_config)."""
    errors = []
    given = config.model_fields_set if config is not None else set()
    if "deployment_type" in given and config is not None:
        if source is Source.EXTERNAL_DOCKER and config.deployment_type is not None:
            errors.append(
                invalid((*_SC, "deployment_type"), "deployment_type is not for external_docker")
            )
        elif current is not None and _type_of(config) != current.get("deployment_type"):
            errors.append(invalid((*_SC, "deployment_type"), "deployment_type cannot be changed"))
    if (
        source is not Source.EXTERNAL_DOCKER
        and config is not None
        and config.custom_url is not None
    ):
        errors.append(
            invalid((*_SC, "custom_url"), f"custom_url is set by the service for {source.value}")
        )
    if source is not Source.EXTERNAL_DOCKER and references is not None:
        errors.append(
            invalid(("body", "secret_references"), "secret_references is external_docker only")
        )
    return errors


def _type_of(config: SourceConfig) -> str | None:
    return None if config.deployment_type is None else config.deployment_type.value


def unknown_listener() -> dict[str, Any]:
    """The error of a listener_id that names no listener of the workspace (POST and PATCH)."""
    return invalid(("body", "source_config", "listener_id"), "unknown listener in this workspace")


def check_repository(source_config: SourceConfig, workspace: WorkspaceConfig) -> None:
    """400 (`RefusedError`) when a git_host repo_url is not in its integration's listing."""
    reason = repo_url_error(source_config, workspace)
    if reason is not None:
        raise RefusedError(reason)
