"""Which control plane a command talks to: flags and `DEPLOYPLANE_*` variables as given,
then the selected context (client-go's `ClientConfig` over its `ConfigOverrides`).

Checked before any request: a missing URL or key, or a malformed URL, is a
`ConfigError` naming what to give, never a failed call."""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from deployplane.api.connection import ENV_API_KEY, ENV_URL, ConnectionSettings
from deployplane.cli.config.contexts import ConfigError, api_key_of, selected_context

__all__ = ["ConnectionOptions", "resolve_connection", "url_given"]


@dataclass(repr=False)
class ConnectionOptions:
    """The connection options of one invocation, as given (any may be missing)."""

    url: str | None = None
    api_key: str | None = None
    tenant_id: str | None = None
    context: str | None = None

    def __repr__(self) -> str:  # never show the key
        return f"ConnectionOptions(url={self.url!r}, tenant_id={self.tenant_id!r})"


def resolve_connection(options: ConnectionOptions | None) -> ConnectionSettings:
    """The invocation's connection; `ConfigError` naming what is missing or wrong.

    Each value: its flag, else its environment variable (click reads both), else the
    context's."""
    options = options or ConnectionOptions()
    context = selected_context(options.context)
    url = options.url or (context.url if context else None)
    tenant_id = options.tenant_id or (context.tenant_id if context else None)
    if not url:
        raise ConfigError(
            f"no control-plane URL: pass --url, set {ENV_URL} or use a context "
            "(deployplane config set-context NAME --url URL)"
        )
    api_key = options.api_key or (api_key_of(context) if context else None)
    if not api_key:
        raise ConfigError(
            f"no API key: set {ENV_API_KEY}, pass --api-key, or give a context a key "
            "source (deployplane config set-context NAME --api-key-file FILE)"
        )
    return ConnectionSettings(checked_url(url), api_key, tenant_id)


def url_given(options: ConnectionOptions | None) -> bool:
    """Whether a control-plane URL was given (flag, variable or context), for a command
    that carries on without one (`trace`). A broken context counts as given, so that
    resolving it says what is wrong."""
    options = options or ConnectionOptions()
    try:
        context = selected_context(options.context)
    except ConfigError:
        return True
    return bool(options.url or (context.url if context else None))


def checked_url(url: str) -> str:
    """`url` when it is an http(s) URL with a host; a malformed URL is the user's typo."""
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise ConfigError(f"invalid control-plane URL {url!r}: {exc}") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ConfigError(f"invalid control-plane URL {url!r}: expected http(s)://host[:port]")
    return url
