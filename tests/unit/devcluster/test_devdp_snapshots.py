"""Byte-for-byte snapshots of generated data: kwok's Stages and a fully-specified render.

The snapshots were written by the code as it stood before issue 15 split kwok.py and
render.py; a refactor that changes a single byte of kwok's config file or of a rendered
object fails here. Regenerate (only for an intended change of output) with
`DEPLOYPLANE_UPDATE_SNAPSHOTS=1 pytest tests/unit/devcluster/test_devdp_snapshots.py`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from tests.support.renderinputs import make_listener, make_revision

from deployplane.api.models import Deployment
from deployplane.dataplane.render import render, with_owner
from deployplane.devcluster.kwok import (
    config_yaml,
    node_manifest,
    option_flags,
    storage_class_manifest,
)

SNAPSHOTS = Path(__file__).parent / "snapshots"
NOW = "2026-01-01T00:00:00Z"

# Every ResourceSpec field the renderer reads, set to a value that shows in the output.
FULL_SPEC: dict[str, Any] = {
    "min_scale": 2,
    "max_scale": 5,
    "cpu": 0.5,
    "cpu_limit": 1,
    "memory_mb": 512,
    "memory_limit_mb": 1025,
    "queue_min_scale": 1,
    "queue_max_scale": 3,
    "queue_cpu": 0.25,
    "queue_cpu_limit": 2,
    "queue_memory_mb": 256,
    "queue_memory_limit_mb": 512,
    "redis_cpu": 0.1,
    "redis_cpu_limit": 0.2,
    "redis_memory_mb": 100,
    "db_cpu": 1,
    "db_cpu_limit": 2,
    "db_memory_mb": 1000,
    "db_memory_limit_mb": 2000,
    "db_storage_gi": 5,
    "db_max_connections": 200,
    "labels": {"team": "support"},
    "annotations": {"example.com/owner": "ops"},
    "service_account_name": "agent-sa",
    "image_pull_secrets": [{"name": "registry-creds"}],
    "volumes": [{"name": "cache", "emptyDir": {}}],
    "volume_mounts": [{"name": "cache", "mountPath": "/cache"}],
    "init_containers": [{"name": "migrate", "image": "tools:1", "args": ["migrate"]}],
    "sidecars": [{"name": "proxy", "image": "proxy:2", "env": [{"name": "A", "value": "b"}]}],
}


def _render_full() -> list[dict[str, Any]]:
    deployment = Deployment.model_validate(
        {
            "id": "0badc0de-0000-4000-8000-000000000001",
            "tenant_id": "11111111-1111-1111-1111-111111111111",
            "name": "Snapshot Agent",
            "source": "external_docker",
            "source_config": {
                "resource_spec": FULL_SPEC,
                "listener_config": {"k8s_namespace": "team-b"},
            },
            "source_revision_config": {"image_uri": "registry.example/agent:1.0"},
            "secrets": [{"name": "OPENAI_API_KEY"}, {"name": "OTHER"}],
            "secret_references": [
                {"name": "EXISTING", "secret_name": "shared", "secret_key": "token"}
            ],
            "created_at": NOW,
            "updated_at": NOW,
            "status": "READY",
        }
    )
    # The render tests' revision and listener: their ids are fixed, so the output is.
    revision, listener = make_revision(), make_listener()
    rendered = render(
        deployment,
        revision,
        listener,
        "registry.example/agent:1.0",
        secret_values={"OPENAI_API_KEY": "snapshot-value", "OTHER": "two"},
        database_password="snapshot-password",
    )
    return [rendered.owner, *with_owner(rendered.objects, "owner-uid")]


def _kwok_documents() -> str:
    extra = {
        "option_flags": option_flags(),
        "node_manifest": node_manifest("kwok-node-0"),
        "storage_class_manifest": storage_class_manifest(),
    }
    return config_yaml() + "---\n# not part of the config file\n" + json.dumps(extra, indent=2)


@pytest.mark.parametrize(
    ("name", "produce"),
    [
        ("kwok_config.yaml", _kwok_documents),
        ("dataplane_render_full.json", lambda: json.dumps(_render_full(), indent=2) + "\n"),
    ],
)
def test_generated_output_matches_its_snapshot(name: str, produce: Any) -> None:
    path = SNAPSHOTS / name
    text = produce()
    if os.environ.get("DEPLOYPLANE_UPDATE_SNAPSHOTS") == "1":
        path.write_text(text)
    assert text == path.read_text()
