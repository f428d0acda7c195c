"""Per-source rules of a deployment that a JSON schema alone cannot state.

Pure functions over the API models, so they are unit-tested without a database.
Each refusal names the offending field by its `loc`, as in HTTPValidationError.
"""

from __future__ import annotations

from typing import Any

from deployplane.api.models import Source, SourceConfig, SourceRevisionConfig
from deployplane.controlplane.errors import invalid
from deployplane.controlplane.settings import WorkspaceConfig

__all__ = [
    "NUL_MESSAGE",
    "TAG_PREFIX",
    "deployment_errors",
    "nul_errors",
    "ref_format_error",
    "repo_url_error",
    "source_allowed",
]

TAG_PREFIX = "refs/tags/"

_GIT_CONFIG_FIELDS = ("integration_id", "repo_url", "build_on_push")
_GIT_REVISION_FIELDS = ("repo_ref", "graph_config_path")


NUL_MESSAGE = "must not contain the NUL character (U+0000)"


def nul_errors(value: Any, loc: tuple[str | int, ...]) -> list[dict[str, Any]]:
    """One error per string in `value` (plain data: dicts, lists, strings) holding U+0000.

    PostgreSQL's text type cannot hold U+0000 (the insert fails), so the emulator refuses
    it in every request on every database alike: SQLite would store it, and the two
    would answer differently. No name, URL, ref or environment value can carry it
    anyway. The error names the place, never the value (it may be a secret).
    """
    if isinstance(value, str):
        return [invalid(loc, NUL_MESSAGE)] if "\x00" in value else []
    errors: list[dict[str, Any]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and "\x00" in key:
                errors.append(invalid(loc, f"keys {NUL_MESSAGE}"))
            errors += nul_errors(item, (*loc, str(key)))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            errors += nul_errors(item, (*loc, index))
    return errors


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
    """`saas` workspaces deploy from git only, `self_hosted` ones from images only."""
    if mode == "saas":
        return source is Source.GIT_HOST
    if mode == "self_hosted":
        return source is Source.EXTERNAL_DOCKER
    return True


def deployment_errors(
    *,
    source: Source,
    source_config: SourceConfig,
    revision_config: SourceRevisionConfig,
    workspace: WorkspaceConfig,
) -> list[dict[str, Any]]:
    """Everything wrong with a deployment's (merged) configuration, [] when valid."""
    errors: list[dict[str, Any]] = []
    sc = ("body", "source_config")
    rc = ("body", "source_revision_config")
    if not source_allowed(workspace.mode, source):
        errors.append(
            invalid(("body", "source"), f"source {source.value} is not available in this workspace")
        )
    if source is Source.GIT_HOST:
        required = (
            (sc, "integration_id", source_config.integration_id),
            (sc, "repo_url", source_config.repo_url),
            (rc, "repo_ref", revision_config.repo_ref),
            (rc, "graph_config_path", revision_config.graph_config_path),
        )
        for prefix, field, value in required:
            if value is None or value == "":
                errors.append(
                    invalid((*prefix, field), "Field required for source git_host", "missing")
                )
        if revision_config.image_uri is not None:
            errors.append(
                invalid((*rc, "image_uri"), "image_uri is not allowed for source git_host")
            )
        integration_id = source_config.integration_id
        if integration_id is not None and all(
            integration.id != integration_id for integration in workspace.integrations
        ):
            errors.append(
                invalid((*sc, "integration_id"), "unknown git-host integration in this workspace")
            )
        repo_ref = revision_config.repo_ref
        ref_error = ref_format_error(repo_ref) if repo_ref else None
        if ref_error is not None:
            errors.append(invalid((*rc, "repo_ref"), f"not a valid git ref: {ref_error}"))
        if (
            source_config.build_on_push is True
            and repo_ref is not None
            and repo_ref.startswith(TAG_PREFIX)
        ):
            errors.append(
                invalid(
                    (*sc, "build_on_push"),
                    "build_on_push must be false when repo_ref is a tag",
                )
            )
    else:
        if not revision_config.image_uri:
            errors.append(
                invalid((*rc, "image_uri"), "Field required for source external_docker", "missing")
            )
        for field in _GIT_CONFIG_FIELDS:
            if getattr(source_config, field) is not None:
                errors.append(
                    invalid((*sc, field), f"{field} is not allowed for source external_docker")
                )
        for field in _GIT_REVISION_FIELDS:
            if getattr(revision_config, field) is not None:
                errors.append(
                    invalid((*rc, field), f"{field} is not allowed for source external_docker")
                )
    return errors
