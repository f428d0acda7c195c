"""Which control plane a command talks to: flags and `DEPLOYPLANE_*` variables as given,
then the selected context (client-go's `ClientConfig` over its `ConfigOverrides`).

Checked before any request: a missing URL or key, or a malformed URL, is a
`ConfigError` naming what to give, never a failed call. The config file is read only
when there is one (or a context is named), so a command given everything by flags and
variables, and shell completion, never load it.
"""

from __future__ import annotations

import os

from deployplane.api.env import ENV_API_KEY, ENV_URL
from deployplane.cli.clientconfig.options import (
    ENV_CONTEXT,
    ConfigError,
    ConnectionOptions,
    config_file,
)

TYPE_CHECKING = False  # not typing's, nor dataclasses: see deployplane.cli.clientconfig.options
if TYPE_CHECKING:
    from deployplane.api.connection import ConnectionSettings
    from deployplane.cli.clientconfig.contexts import Context

__all__ = ["Resolved", "resolve_connection", "resolved", "url_given"]


class Resolved:
    """The three values of a connection, before the URL is checked."""

    __slots__ = ("api_key", "tenant_id", "url")

    def __init__(self, url: str, api_key: str, tenant_id: str | None) -> None:
        self.url = url
        self.api_key = api_key
        self.tenant_id = tenant_id

    def __repr__(self) -> str:  # never show the key
        return f"Resolved(url={self.url!r}, tenant_id={self.tenant_id!r})"


def _selected(options: ConnectionOptions) -> Context | None:
    """The context the invocation names, else the config file's current one; None
    without either (the file is not read when there is none)."""
    named = options.context or os.environ.get(ENV_CONTEXT)
    if not named and not os.path.exists(config_file()):
        return None
    from deployplane.cli.clientconfig.contexts import selected_context

    return selected_context(options.context)


def resolved(options: ConnectionOptions | None) -> Resolved:
    """The invocation's URL, key and tenant; `ConfigError` naming what is missing.

    Each value: its flag, else its environment variable (click reads both), else the
    context's."""
    options = options or ConnectionOptions()
    context = _selected(options)
    url = options.url or (context.url if context else None)
    tenant_id = options.tenant_id or (context.tenant_id if context else None)
    if not url:
        raise ConfigError(
            f"no control-plane URL: pass --url, set {ENV_URL} or use a context "
            "(deployplane config set-context NAME --url URL)"
        )
    api_key = options.api_key
    if not api_key and context:
        from deployplane.cli.clientconfig.contexts import api_key_of

        api_key = api_key_of(context)
    if not api_key:
        raise ConfigError(
            f"no API key: set {ENV_API_KEY}, pass --api-key, or give a context a key "
            "source (deployplane config set-context NAME --api-key-file FILE)"
        )
    return Resolved(url, api_key, tenant_id)


def resolve_connection(options: ConnectionOptions | None) -> ConnectionSettings:
    """The invocation's connection, its URL checked; `ConfigError` naming what is
    missing or wrong."""
    from deployplane.api.connection import ConnectionSettings

    values = resolved(options)
    return ConnectionSettings(checked_url(values.url), values.api_key, values.tenant_id)


def url_given(options: ConnectionOptions | None) -> bool:
    """Whether a control-plane URL was given (flag, variable or context), for a command
    that carries on without one (`trace`). A broken context counts as given, so that
    resolving it says what is wrong."""
    options = options or ConnectionOptions()
    try:
        context = _selected(options)
    except ConfigError:
        return True
    return bool(options.url or (context.url if context else None))


def checked_url(url: str) -> str:
    """`url` when it is an http(s) URL with a host; a malformed URL is the user's typo."""
    import httpx

    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise ConfigError(f"invalid control-plane URL {url!r}: {exc}") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ConfigError(f"invalid control-plane URL {url!r}: expected http(s)://host[:port]")
    return url
