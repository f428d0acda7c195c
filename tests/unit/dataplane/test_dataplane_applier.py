"""What an owner's record says is applied: the objects of a new render that differ from it
(`applier.changed_since`), so that a changed render is applied only where it changed."""

from __future__ import annotations

import copy
from typing import Any

from deployplane.dataplane.applier import changed_since
from deployplane.dataplane.render import OWNER_OBJECT_DIGESTS, Rendered, object_key
from deployplane.dataplane.render.model import object_digests, render_digest


def rendered(*objects: dict[str, Any]) -> Rendered:
    owner = {
        "kind": "ConfigMap",
        "metadata": {"name": "app", "namespace": "agents"},
        "data": {
            "render-digest": render_digest(objects),
            OWNER_OBJECT_DIGESTS: object_digests(objects),
        },
    }
    return Rendered(namespace="agents", owner=owner, objects=list(objects))


def obj(kind: str, name: str, **spec: Any) -> dict[str, Any]:
    return {"kind": kind, "metadata": {"name": name, "namespace": "agents"}, "spec": spec}


SERVER = obj("Deployment", "app", image="app:1")
REDIS = obj("Deployment", "app-redis", image="redis:7")
SECRET = {"kind": "Secret", "metadata": {"name": "app-secrets"}, "data": {"k": "dg=="}}


def test_only_the_objects_whose_render_changed() -> None:
    before = rendered(SERVER, REDIS, SECRET)
    redis = copy.deepcopy(REDIS)
    redis["spec"]["image"] = "redis:8"
    assert changed_since(before.owner, rendered(SERVER, redis, SECRET)) == {object_key(redis)}
    assert changed_since(before.owner, rendered(SERVER, REDIS, SECRET)) == set()


def test_an_object_the_record_does_not_have_is_applied() -> None:
    policy = obj("NetworkPolicy", "app")
    assert changed_since(rendered(SERVER).owner, rendered(SERVER, policy)) == {"NetworkPolicy/app"}


def test_an_owner_without_a_record_has_every_object_applied() -> None:
    earlier = {"data": {"render-digest": "0" * 32}}  # an owner an earlier agent wrote
    assert changed_since(earlier, rendered(SERVER, REDIS, SECRET)) == {
        "Deployment/app",
        "Deployment/app-redis",
        "Secret/app-secrets",
    }
