"""The server runtime an image runs decides what the agent renders and how long a
crashing server may restart: the in-memory server alone, the vendor's with its queue,
PostgreSQL and Redis (issue 37 item 3)."""

from __future__ import annotations

from typing import Any

import pytest
from tests.support.renderinputs import (
    BASE,
    IMAGE,
    PASSWORD,
    SECRET_VALUES,
    make_deployment,
    make_listener,
    make_revision,
    server_container,
)

from deployplane.api.dataplane import ReportedStatus, RevisionWork, ServerRuntime
from deployplane.api.models import Source
from deployplane.dataplane.render import Rendered, render
from deployplane.dataplane.rollout import CRASH_RESTARTS, rollout_verdict
from deployplane.emulator.store.dataplane import runtime_of

REV = "rev-2"


def rendered(runtime: ServerRuntime, spec: dict[str, Any] | None = None) -> Rendered:
    return render(
        make_deployment(spec, secrets=["OPENAI_API_KEY"]),
        make_revision(),
        make_listener(),
        IMAGE,
        secret_values=SECRET_VALUES,
        database_password=PASSWORD,
        runtime=runtime,
    )


def kinds(r: Rendered) -> list[tuple[str, str]]:
    return sorted((o["kind"], o["metadata"]["name"]) for o in r.objects)


def test_the_in_memory_server_is_rendered_alone() -> None:
    r = rendered(ServerRuntime.INMEM, {"max_scale": 5, "queue_min_scale": 2})
    assert kinds(r) == [
        ("Deployment", BASE),
        ("NetworkPolicy", BASE),
        ("PersistentVolumeClaim", f"{BASE}-state"),
        ("Secret", f"{BASE}-secrets"),
        ("Service", BASE),
    ]
    assert r.runtime is ServerRuntime.INMEM
    env = {e["name"] for e in server_container(r)["env"]}
    # no database nor Redis; where its files are and how long it drains at a stop
    assert env == {
        "OPENAI_API_KEY",
        "DEPLOYPLANE_COMPONENT",
        "LANGGRAPH_DATA_DIR",
        "DEPLOYPLANE_DRAIN_SECONDS",
    }


def test_the_in_memory_server_runs_one_replica_without_an_autoscaler() -> None:
    r = rendered(ServerRuntime.INMEM, {"min_scale": 3, "max_scale": 5})
    server = next(o for o in r.objects if o["kind"] == "Deployment")
    assert server["spec"]["replicas"] == 1
    assert not [o for o in r.objects if o["kind"] == "HorizontalPodAutoscaler"]


def test_readiness_is_the_servers_own_ok_in_both_runtimes() -> None:
    for runtime in ServerRuntime:
        probe = server_container(rendered(runtime))["readinessProbe"]
        assert probe["httpGet"] == {"path": "/ok?check_db=1", "port": "http"}


def test_the_vendor_runtime_is_the_default_and_renders_everything() -> None:
    default = render(
        make_deployment(secrets=["OPENAI_API_KEY"]),
        make_revision(),
        make_listener(),
        IMAGE,
        secret_values=SECRET_VALUES,
        database_password=PASSWORD,
    )
    assert default == rendered(ServerRuntime.POSTGRES)
    names = {name for _, name in kinds(default)}
    assert {f"{BASE}-queue", f"{BASE}-redis", f"{BASE}-db"} <= names


def test_the_emulators_remote_build_runs_the_in_memory_server() -> None:
    assert runtime_of(Source.INTERNAL_SOURCE) is ServerRuntime.INMEM
    assert runtime_of(Source.EXTERNAL_DOCKER) is ServerRuntime.POSTGRES
    assert runtime_of(Source.GIT_HOST) is ServerRuntime.POSTGRES


def test_an_answer_without_a_runtime_means_the_vendors() -> None:
    work = RevisionWork.model_validate(
        {
            "revision_id": "22222222-0000-4000-8000-000000000003",
            "status": "DEPLOYING",
            "image_uri": "x",
        }
    )
    assert work.runtime is ServerRuntime.POSTGRES


def deployment() -> dict[str, Any]:
    return {
        "metadata": {"generation": 2},
        "spec": {
            "replicas": 1,
            "template": {"metadata": {"annotations": {"deployplane.io/revision-id": REV}}},
        },
        "status": {"observedGeneration": 2},
    }


def crashing(restarts: int, revision: str = REV) -> dict[str, Any]:
    return {
        "metadata": {"name": "p-1", "annotations": {"deployplane.io/revision-id": revision}},
        "status": {
            "containerStatuses": [
                {
                    "name": "agent-server",
                    "restartCount": restarts,
                    "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                    "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}},
                }
            ]
        },
    }


@pytest.mark.parametrize("runtime", list(ServerRuntime))
def test_a_server_crashing_at_start_fails_after_its_runtimes_restarts(
    runtime: ServerRuntime,
) -> None:
    limit = CRASH_RESTARTS[runtime]
    before = rollout_verdict(deployment(), [crashing(limit - 1)], REV, runtime)
    assert before.status is ReportedStatus.DEPLOYING
    failed = rollout_verdict(deployment(), [crashing(limit)], REV, runtime)
    assert failed.status is ReportedStatus.DEPLOY_FAILED
    times = "once" if limit == 1 else f"{limit} times"
    assert failed.message == (
        f"CrashLoopBackOff: container agent-server crashed at start {times} (exit code 1, Error)"
    )
    assert failed.crashed == ("p-1", "agent-server")


def test_an_old_revisions_crashing_pod_fails_nothing() -> None:
    verdict = rollout_verdict(deployment(), [crashing(9, "rev-1")], REV, ServerRuntime.INMEM)
    assert verdict.status is ReportedStatus.DEPLOYING
    assert verdict.crashed is None


def test_the_in_memory_server_fails_at_its_first_crash() -> None:
    assert CRASH_RESTARTS[ServerRuntime.INMEM] == 1
    assert CRASH_RESTARTS[ServerRuntime.POSTGRES] > 1
