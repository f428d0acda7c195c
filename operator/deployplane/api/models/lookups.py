"""Read-only lookups: an integration's repositories and an OAuth provider."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from deployplane.api.models.common import ApiModel


class GitRepository(ApiModel):
    """An entry of GET /v1/integrations/git_host/{integration_id}/repos."""

    host_integration_id: UUID
    id: int
    name: str
    owner: str
    url: str
    default_branch: str


class OAuthProviderFields(ApiModel):
    """The fields of an OAuth provider up to its timestamps: the API model below adds
    the rest (in the published order), and the emulator's settings
    (`OAuthProviderConfig`) configure these with their own defaults."""

    id: str
    organization_id: str
    provider_id: str
    name: str
    client_id: str
    auth_url: str
    token_url: str
    uses_pkce: bool
    code_challenge_method: str | None


class OAuthProvider(OAuthProviderFields):
    """GET /v2/auth/providers/{provider_id}."""

    created_at: datetime
    updated_at: datetime
    provider_type: str | None = None
