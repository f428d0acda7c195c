"""Pod Security: what every pod and container of the data plane declares, so that a
namespace enforcing the `restricted` Pod Security Standard admits them
(docs/dataplane.md, "Pod Security").

Every container: no privilege escalation and every capability dropped; every pod: the
container runtime's default seccomp profile and `runAsNonRoot`. Our own images (the
PostgreSQL and Redis of `make images`, the agent base the emulator builds on) run as a
fixed non-root user on a read-only root filesystem, with volumes of their own for what
they write. The user's image keeps the user it declares: no `runAsUser`, but
`runAsNonRoot` makes the kubelet refuse to start an image that runs as root (or names
its user by name: the kubelet cannot tell that it is not root).

`PodSecurity.BASELINE` (the agent's setting) is for images that must run as root, as
`langgraph build`'s on the vendor's base do: the user's containers are rendered without
`runAsNonRoot` and keep the runtime's default capabilities, which only the `baseline`
standard admits. Our own images stay restricted either way.
"""

from __future__ import annotations

from deployplane.dataplane.render.model import Obj
from deployplane.dataplane.render.settings import PodSecurity

__all__ = [
    "RUNTIME_DEFAULT",
    "container_context",
    "own_image_pod_context",
    "user_pod_context",
    "users_container",
]

RUNTIME_DEFAULT: Obj = {"type": "RuntimeDefault"}


def container_context(level: PodSecurity, *, read_only: bool = False) -> Obj:
    """The securityContext of a container the data plane renders. `read_only`: the
    root filesystem too (an image of ours, whose writable paths are volumes)."""
    context: Obj = {"allowPrivilegeEscalation": False}
    if level is PodSecurity.RESTRICTED:
        context["capabilities"] = {"drop": ["ALL"]}
    if read_only:
        context["readOnlyRootFilesystem"] = True
    return context


def user_pod_context(level: PodSecurity) -> Obj:
    """The pod securityContext of the agent server and the queue: the image's own user,
    non-root unless the agent's setting is `baseline`."""
    context: Obj = {"seccompProfile": dict(RUNTIME_DEFAULT)}
    if level is PodSecurity.RESTRICTED:
        context["runAsNonRoot"] = True
    return context


def own_image_pod_context(user: int) -> Obj:
    """The pod securityContext of an image of ours: its user and group `user`, which
    also owns the pod's volumes (`fsGroup`: a fresh claim is root's)."""
    return {
        "runAsNonRoot": True,
        "runAsUser": user,
        "runAsGroup": user,
        "fsGroup": user,
        # Only a volume whose root is not the group's yet is walked: a large database
        # is not chowned again at every start.
        "fsGroupChangePolicy": "OnRootMismatch",
        "seccompProfile": dict(RUNTIME_DEFAULT),
    }


def users_container(container: Obj, level: PodSecurity) -> Obj:
    """A sidecar or init container of the resource spec with the data plane's container
    securityContext where it sets nothing itself: a key the user set wins (theirs to
    answer for, and a namespace's Pod Security admission judges it)."""
    theirs = container.get("securityContext") or {}
    return {**container, "securityContext": {**container_context(level), **theirs}}
