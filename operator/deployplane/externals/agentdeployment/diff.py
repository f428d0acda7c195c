"""Desired vs latest for a deployment: a pure function, the PATCH body (ACK's `delta`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from deployplane.api.models import Deployment, DeploymentPatch, Source, camelize
from deployplane.externals.agentdeployment.resolve import Desired
from deployplane.externals.diffing import differing, dump

# The revision fields a PATCH may change (repo_commit_sha is the service's to report).
_REVISION_FIELDS = ("repo_ref", "graph_config_path", "image_uri")


@dataclass(frozen=True)
class DeploymentDelta:
    """The PATCH that brings a deployment to the spec, and what applying it records."""

    body: DeploymentPatch
    fields: tuple[str, ...]
    """The camelCase names of what differs (never values: secrets are among them)."""
    secrets_hash: str | None
    """The digest of the secret values the PATCH sends (or that were already there)."""
    new_revision: bool = False
    """The PATCH carries the revision fields although they did not change: the latest
    revision is not deployed, so the change must come with a revision of its own."""
    action: str = "update"
    """What sending it does (`revision_made`): new-revision, rebuild, or update."""
    reasons: tuple[str, ...] = ()
    """Why it makes a revision: image, source, config (none for an update)."""


def diff(
    desired: Desired, latest: Deployment, known_hash: str | None, *, deployed: bool = True
) -> DeploymentDelta | None:
    """What differs between `desired` and `latest` (None when in sync). Fields the spec
    leaves out are not ours to manage; secret values are never read back, so they count
    as changed when their salted digest differs from `known_hash`, the one last applied.

    `deployed`: whether the deployment's latest revision is DEPLOYED. A change without
    a revision reaches a deployed revision through the data plane (`remote_reconciled`);
    any other may never run it (a failed revision runs nothing, and what a service does
    with a change that lands while a revision is on its way is not published). So when
    it is not, a change is sent with the spec's revision fields, which the published
    rule says makes a new revision (a non-null image_uri, repo_ref or graph_config_path):
    it is rendered from the deployment as changed, on any service."""
    patch: dict[str, Any] = {}
    source_config = differing(desired.source_config, dump(latest.source_config))
    if source_config:
        patch["source_config"] = source_config
    latest_rev = dump(latest.source_revision_config)
    revision = {
        k: v
        for k, v in desired.revision_config.items()
        if k in _REVISION_FIELDS and latest_rev.get(k) != v
    }
    if revision:
        patch["source_revision_config"] = revision
    if desired.secret_references is not None and _refs(desired.secret_references) != _refs(
        latest.secret_references or []
    ):
        patch["secret_references"] = desired.secret_references
    if desired.secrets is not None:
        names_now = sorted(s.name for s in latest.secrets or [])
        names_want = sorted(s.name for s in desired.secrets)
        if desired.secrets_hash != known_hash or names_now != names_want:
            patch["secrets"] = desired.secrets
    if not patch:
        return None
    names = tuple(_names(patch))
    rolled = {
        k: v for k, v in desired.revision_config.items() if k in _REVISION_FIELDS and v is not None
    }
    new_revision = not deployed and "source_revision_config" not in patch and bool(rolled)
    if new_revision:
        patch["source_revision_config"] = rolled
    body = DeploymentPatch.model_validate(patch, by_alias=False, by_name=True)
    action, reasons = revision_made(patch, desired.body.source.value, resent=new_revision)
    return DeploymentDelta(body, names, desired.secrets_hash, new_revision, action, reasons)


# Why a PATCH makes a revision, by what it carries (in a plan's words).
_REVISION_REASONS: Final = (
    ("image_uri", "image"),
    ("repo_ref", "source"),
    ("graph_config_path", "config"),
)


def revision_made(
    patch: dict[str, Any], source: str, *, resent: bool = False
) -> tuple[str, tuple[str, ...]]:
    """What a PATCH does to the deployment, and why: `new-revision` or `rebuild` (a
    git_host revision of the same ref: its build runs again, on the branch as it is
    then), with the reasons (image, source, config); else `update`, a change without a
    revision. By the spec, a non-null image_uri, repo_ref or graph_config_path makes a
    revision; by the vendor's documentation ("to deploy code changes or update
    secrets"), so do secrets; and the environment is the revision's, so do
    secret_references (docs/emulator.md). `resent`: the revision fields ride along
    unchanged, to carry a change onto a revision that is not deployed."""
    revision = patch.get("source_revision_config") or {}
    changed = revision if not resent else {}
    reasons = [why for key, why in _REVISION_REASONS if changed.get(key) is not None]
    if resent or "secrets" in patch or "secret_references" in patch:
        reasons.append("config")
    if not reasons:
        return "update", ()
    unique = tuple(dict.fromkeys(reasons))
    rebuild = source == Source.GIT_HOST.value and changed.get("repo_ref") is None
    return ("rebuild" if rebuild else "new-revision"), unique


def _refs(references: list[Any]) -> list[dict[str, Any]]:
    return [r.model_dump(mode="json") for r in references]


def _names(patch: dict[str, Any]) -> list[str]:
    names: list[str] = []
    for section in ("source_config", "source_revision_config"):
        names += [f"{camelize(section)}.{camelize(k)}" for k in patch.get(section, {})]
    for key in ("secrets", "secret_references"):
        if key in patch:
            names.append(camelize(key))
    return names
