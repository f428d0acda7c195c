"""What a revision reaching a state means for its deployment, without a database: the
image version a deployed revision reports, and whether its data plane applied it.
"""

from __future__ import annotations

from deployplane.api.models import RevisionStatus, Source

__all__ = ["image_version", "reconciled_on_reaching"]


def reconciled_on_reaching(status: RevisionStatus) -> bool:
    """The simulated data plane: a revision is applied (`remote_reconciled`) once terminal."""
    return status.is_terminal


def image_version(source: Source, image_uri: str | None, repo_commit_sha: str | None) -> str | None:
    """What a deployed revision reports as the deployment's image version."""
    if source is not Source.GIT_HOST:
        return image_uri
    return repo_commit_sha[:7] if repo_commit_sha else None
