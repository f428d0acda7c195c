"""Emulator settings: the YAML config file and the command-line choices.

The config file is validated strictly (unknown keys are an error naming the key):
a typo such as `step_second` would otherwise silently fall back to a default and make
a chaos or timing test lie about what it exercised.
"""

from __future__ import annotations

import os
import re
import secrets
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    AliasGenerator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from deployplane.api.models import RevisionStatus
from deployplane.api.models.lookups import OAuthProviderFields

__all__ = [
    "DEFAULT_DATABASE_URL",
    "DEV_INTEGRATION_ID",
    "DEV_WORKSPACE_ID",
    "MAX_LATENCY_MS",
    "ConfigError",
    "EmulatorConfig",
    "FailureRule",
    "FaultsConfig",
    "ImageBuildConfig",
    "IntegrationConfig",
    "OAuthProviderConfig",
    "PipelineConfig",
    "RepositoryConfig",
    "Settings",
    "WorkspaceConfig",
    "WorkspaceMode",
    "dev_config",
    "load_config",
    "parse_config",
]

DEFAULT_DATABASE_URL = "sqlite+aiosqlite:///./.deployplane/controlplane.db"

# Fixed ids so a dev database keeps working across restarts even though the dev
# API key is generated anew each time.
DEV_WORKSPACE_ID = uuid.UUID("d3910ba1-0000-4000-8000-000000000001")
DEV_INTEGRATION_ID = uuid.UUID("d3910ba1-0000-4000-8000-000000000002")

WorkspaceMode = Literal["saas", "self_hosted", "both"]


class ConfigError(ValueError):
    """The config file cannot be read or does not have the documented shape."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RepositoryConfig(_Strict):
    id: int
    name: str
    owner: str
    url: str
    default_branch: str


class IntegrationConfig(_Strict):
    id: uuid.UUID
    repositories: list[RepositoryConfig] = Field(default_factory=list)


class OAuthProviderConfig(OAuthProviderFields):
    """The API model's fields, read as every setting is (`_Strict`, snake_case keys
    only: each field's alias is its name). Unset timestamps are answered as the
    emulator's start (`routes/lookups.py`)."""

    model_config = ConfigDict(
        **_Strict.model_config, alias_generator=AliasGenerator(validation_alias=lambda name: name)
    )

    code_challenge_method: str | None = None
    provider_type: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None


class WorkspaceConfig(_Strict):
    id: uuid.UUID
    name: str
    api_keys: list[str] = Field(default_factory=list)
    bearer_tokens: list[str] = Field(default_factory=list)
    mode: WorkspaceMode = "both"
    # Deployments keyed by an agent and an environment (the vendor CLI's agent mode,
    # `langgraph deploy --agent-id`): on unless the workspace turns it off, and then the
    # agent fields are refused (403).
    agent_mode: bool = True
    integrations: list[IntegrationConfig] = Field(default_factory=list)
    oauth_providers: list[OAuthProviderConfig] = Field(default_factory=list)

    def __repr__(self) -> str:  # credentials stay out of logs and tracebacks
        return (
            f"WorkspaceConfig(id={self.id}, name={self.name!r}, mode={self.mode!r}, "
            f"agent_mode={self.agent_mode})"
        )

    __str__ = __repr__


_FAILURE_STATUSES = {
    RevisionStatus.CREATE_FAILED,
    RevisionStatus.BUILD_FAILED,
    RevisionStatus.DEPLOY_FAILED,
}


class FailureRule(_Strict):
    """A revision matching every regex given stops at `status` instead of deploying;
    with `first_revisions`, only a deployment's first N revisions do (a failure that a
    later revision gets past, as a build that ran out of disk)."""

    image_uri_regex: str | None = None
    repo_ref_regex: str | None = None
    name_regex: str | None = None
    first_revisions: int | None = Field(None, ge=1)
    status: RevisionStatus

    @field_validator("status")
    @classmethod
    def _a_failure(cls, value: RevisionStatus) -> RevisionStatus:
        if value not in _FAILURE_STATUSES:
            raise ValueError("must be CREATE_FAILED, BUILD_FAILED or DEPLOY_FAILED")
        return value

    @field_validator("image_uri_regex", "repo_ref_regex", "name_regex")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"invalid regex: {exc}") from exc
        return value

    def matches(
        self, *, name: str, image_uri: str | None, repo_ref: str | None, seq: int = 1
    ) -> bool:
        """`seq`: the revision's number among its deployment's (the first is 1)."""
        if self.first_revisions is not None and seq > self.first_revisions:
            return False
        checks = (
            (self.image_uri_regex, image_uri),
            (self.repo_ref_regex, repo_ref),
            (self.name_regex, name),
        )
        given = [(regex, value) for regex, value in checks if regex is not None]
        if not given:
            return False
        return all(value is not None and re.search(regex, value) for regex, value in given)


class PipelineConfig(_Strict):
    step_seconds: float = Field(1.0, ge=0)
    # Time a revision spends BUILDING (default step_seconds): a remote build's log is
    # read while it builds (`langgraph deploy --verbose` polls every 3 s).
    build_seconds: float | None = Field(None, ge=0)

    def seconds_in(self, status: RevisionStatus) -> float:
        """How long a revision stays in the in-progress state `status`."""
        if status is RevisionStatus.BUILDING and self.build_seconds is not None:
            return self.build_seconds
        return self.step_seconds

    failures: list[FailureRule] = Field(default_factory=list)

    def failure_for(
        self, *, name: str, image_uri: str | None, repo_ref: str | None, seq: int = 1
    ) -> RevisionStatus | None:
        for rule in self.failures:
            if rule.matches(name=name, image_uri=image_uri, repo_ref=repo_ref, seq=seq):
                return rule.status
        return None


# Injected latency is bounded: beyond it every request of every tenant would hang.
MAX_LATENCY_MS = 10_000


class FaultsConfig(_Strict):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    error_rate: float = Field(0.0, ge=0, le=1)
    latency_ms: float = Field(0, ge=0, le=MAX_LATENCY_MS)


def _cache() -> Path:
    return Path(os.environ.get("DEPLOYPLANE_CACHE") or Path.home() / ".cache" / "deployplane")


class ImageBuildConfig(_Strict):
    """The remote build of an internal_source revision as real images (docs/emulator.md):
    buildah's storage and the builds' directories in `work_dir`, the agent base read from
    `base_archive` (`make images`), each built image written as an OCI archive to
    `output_dir` and named `repository:<key>`, imported into a dev cluster's real node
    when `load_into_dev_cluster` names one. Unset (the default): the build only checks
    the upload (`tarballcheck`)."""

    work_dir: Path = Field(default_factory=lambda: _cache() / "agent-builds")
    base_archive: Path = Field(
        default_factory=lambda: _cache() / "images" / "deployplane-agent-base-0.16.7.tar"
    )
    output_dir: Path = Field(default_factory=lambda: _cache() / "agent-builds" / "images")
    repository: str = Field("localhost/deployplane-agent", pattern=r"^[a-z0-9./_-]+$")
    buildah: str = "buildah"
    # The state directory of a dev cluster with a real node: each image built (or found
    # built) is imported into that node's containerd (`deployplane dev cluster
    # load-image`), as the real service pushes to a registry its clusters pull from.
    load_into_dev_cluster: Path | None = None


class EmulatorConfig(_Strict):
    # Serve the published contract only: every emulator extension off (docs/emulator.md).
    strict: bool = False
    workspaces: list[WorkspaceConfig] = Field(default_factory=list)
    pipeline: PipelineConfig = Field(default_factory=PipelineConfig)
    faults: FaultsConfig = Field(default_factory=FaultsConfig)
    # Real image builds (None: the remote build checks the upload only).
    image_builds: ImageBuildConfig | None = None
    # Credentials of the emulator's own endpoints (/_emulator/*: faults, statistics),
    # sent as X-Admin-Key. None configured: those endpoints answer 401 to everyone.
    admin_api_keys: list[str] = Field(default_factory=list)
    # Key of the digests kept of secret values (see `secretdigest`); when unset, one is
    # generated once per database (docs/emulator.md says where it is kept).
    secret_digest_key: str | None = Field(None, min_length=32)

    @model_validator(mode="after")
    def _admin_keys_are_not_tenant_keys(self) -> EmulatorConfig:
        tenant = {k for w in self.workspaces for k in (*w.api_keys, *w.bearer_tokens)}
        if tenant & set(self.admin_api_keys):
            # Said without the key: it is a credential.
            raise ValueError("an admin_api_keys entry is also a workspace credential")
        return self

    def __repr__(self) -> str:  # credentials stay out of logs and tracebacks
        return f"EmulatorConfig(workspaces={self.workspaces!r})"

    __str__ = __repr__


class Settings(BaseModel):
    """Everything `create_app` needs."""

    model_config = ConfigDict(frozen=True)

    database_url: str = DEFAULT_DATABASE_URL
    config: EmulatorConfig = Field(default_factory=EmulatorConfig)
    max_body_bytes: int = 1024 * 1024
    # A source tarball PUT to an upload URL (the vendor CLI's 200 MB archive limit), and
    # how long such a URL works.
    max_upload_bytes: int = 200 * 1024 * 1024
    upload_url_seconds: float = 900.0
    # Only what the real service serves: the emulator's extensions (such as
    # /_emulator/*) are not registered.
    strict: bool = False

    @property
    def strict_mode(self) -> bool:
        """Strict by this flag (Python callers) or by the config key / --strict."""
        return self.strict or self.config.strict


def new_dev_key() -> str:
    """A fresh dev workspace API key."""
    return "dpk_" + secrets.token_urlsafe(24)


def dev_config(*, api_key: str | None = None) -> tuple[EmulatorConfig, str]:
    """The config used without --config: one `both` workspace with a demo repository.

    Returns the config and its API key (generated unless given).
    """
    key = api_key or new_dev_key()
    now = datetime(2024, 1, 1, tzinfo=UTC)
    workspace = WorkspaceConfig(
        id=DEV_WORKSPACE_ID,
        name="dev",
        api_keys=[key],
        mode="both",
        integrations=[
            IntegrationConfig(
                id=DEV_INTEGRATION_ID,
                repositories=[
                    RepositoryConfig(
                        id=1,
                        name="agent",
                        owner="dev",
                        url="https://git.example.com/dev/agent",
                        default_branch="main",
                    )
                ],
            )
        ],
        oauth_providers=[
            OAuthProviderConfig(
                id="dev-provider",
                organization_id="dev-org",
                provider_id="dev-sso",
                name="Dev SSO",
                client_id="dev-client",
                auth_url="https://sso.example.com/auth",
                token_url="https://sso.example.com/token",
                uses_pkce=True,
                code_challenge_method="S256",
                provider_type="oidc",
                created_at=now,
                updated_at=now,
            )
        ],
    )
    return EmulatorConfig(workspaces=[workspace]), key


def _describe(exc: ValidationError) -> str:
    lines = []
    for error in exc.errors(include_input=False, include_url=False):
        where = ".".join(str(part) for part in error["loc"]) or "<root>"
        if error["type"] == "extra_forbidden":
            lines.append(f"{where}: unknown key")
        else:
            lines.append(f"{where}: {error['msg']}")
    return "; ".join(lines)


def parse_config(data: Any, *, source: str = "config") -> EmulatorConfig:
    if data is None:
        data = {}
    try:
        return EmulatorConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{source}: {_describe(exc)}") from None


def load_config(path: Path) -> EmulatorConfig:
    """Read and validate a YAML config file; errors name the file and the key."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: {exc.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    return parse_config(data, source=str(path))
