"""tests/support/renderdump.py, the upgrade test's view of a release's render: run under a
checkout's `operator/` (here this one's), it prints what `render` renders for the inputs
the control plane answers, without the Secrets, and the owner's digest."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from deployplane.api.dataplane import RevisionWork
from deployplane.api.models import Deployment, Listener, Revision
from deployplane.dataplane.render import OWNER_DIGEST, render
from deployplane.dataplane.render.settings import from_env

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "tests" / "support" / "renderdump.py"
NOW = "2026-01-01T00:00:00Z"
SECRET = "sk-not-to-be-printed"


def inputs() -> dict[str, Any]:
    deployment = {
        "id": "0badc0de-0000-4000-8000-000000000001",
        "tenant_id": "11111111-1111-1111-1111-111111111111",
        "name": "my-agent",
        "source": "external_docker",
        "source_config": {
            "listener_id": "11111111-0000-4000-8000-000000000002",
            "listener_config": {"k8s_namespace": "agents"},
            "resource_spec": {"min_scale": 1, "max_scale": 2},
        },
        "source_revision_config": {"image_uri": "registry.example/agent:1"},
        "secrets": [{"name": "OPENAI_API_KEY"}],
        "created_at": NOW,
        "updated_at": NOW,
        "status": "READY",
    }
    revision = {
        "id": "22222222-0000-4000-8000-000000000003",
        "created_at": NOW,
        "updated_at": NOW,
        "status": "DEPLOYED",
        "source": "external_docker",
        "source_revision_config": {"image_uri": "registry.example/agent:1"},
    }
    listener = {
        "id": "11111111-0000-4000-8000-000000000002",
        "compute_type": "k8s",
        "compute_id": "cluster-1",
        "compute_config": {"k8s_namespaces": ["agents"]},
        "created_at": NOW,
        "updated_at": NOW,
    }
    work = {
        "revision_id": revision["id"],
        "status": "DEPLOYED",
        "image_uri": "registry.example/agent:1",
        "secret_values": {"OPENAI_API_KEY": SECRET},
    }
    env = {"DEPLOYPLANE_REDIS_IMAGE": "redis:7.0", "DEPLOYPLANE_AUTOSCALER": "hpa"}
    return {
        "deployment": deployment,
        "revision": revision,
        "listener": listener,
        "work": work,
        "database_password": "db-pass",
        "env": env,
    }


def test_it_prints_the_checkouts_render_without_secrets_and_the_owners_digest() -> None:
    given = inputs()
    done = subprocess.run(
        [sys.executable, str(SCRIPT)],
        input=json.dumps(given),
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(ROOT / "operator")},
    )
    assert SECRET not in done.stdout
    assert "db-pass" not in done.stdout
    printed = json.loads(done.stdout)
    work = RevisionWork.model_validate(given["work"])
    expected = render(
        Deployment.model_validate(given["deployment"]),
        Revision.model_validate(given["revision"]),
        Listener.model_validate(given["listener"]),
        "registry.example/agent:1",
        secret_values=work.secret_values,
        database_password="db-pass",
        settings=from_env(given["env"]),
    )
    assert printed["digest"] == expected.owner["data"][OWNER_DIGEST]
    assert printed["objects"] == [o for o in expected.objects if o["kind"] != "Secret"]
    assert "redis:7.0" in done.stdout
