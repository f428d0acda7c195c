"""`deployplane trace`: the pure tree builder (golden tables at 60, 80 and 200 columns,
missing pieces as lines with reasons) and the command over a fake Kubernetes and the
fake control plane of tests/support/cli_service.py (GETs only, exit codes, -o json)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner, Result
from tests.support import cli_service
from tests.support.cli_service import (
    DEP_ID,
    LIS_ID,
    REV_ID,
    FakeService,
    deployment,
    listener,
    revision,
)

from deployplane.api.models import Deployment, Listener, Revision
from deployplane.cli.commands import tables
from deployplane.cli.commands.tables import render
from deployplane.cli.commands.trace import command as trace_command
from deployplane.cli.commands.trace.readers import KubeAccess, KubeError
from deployplane.cli.commands.trace.tree import (
    COLUMNS,
    Missing,
    Node,
    Workloads,
    build_agentdeployment,
    build_listener,
    rows,
    to_data,
)
from deployplane.cli.root import root as root_app

service = cli_service.service  # the fake control plane, as a fixture of this module

CREATED = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)  # cli_service.NOW
AT = CREATED + timedelta(hours=3, minutes=25)
OLD = "2025-01-02T01:04:05Z"
NEW_REV = "55555555-5555-4555-8555-555555555555"


def condition(type_: str, status: str, reason: str, message: str = "") -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": message}


def agd(**status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "deployplane.io/v1alpha1",
        "kind": "AgentDeployment",
        "metadata": {"name": "bot", "namespace": "team", "uid": "u-1", "creationTimestamp": OLD},
        "spec": {"source": "external_docker", "sourceConfig": {"listenerRef": {"name": "edge"}}},
        "status": {
            "deploymentId": DEP_ID,
            "conditions": [
                condition("Ready", "True", "Available"),
                condition("Synced", "True", "ReconcileSuccess"),
            ],
            **status,
        },
    }


def listener_cr(**status: Any) -> dict[str, Any]:
    return {
        "kind": "Listener",
        "metadata": {"name": "edge", "uid": "u-2", "creationTimestamp": OLD},
        "spec": {"computeType": "k8s", "computeId": "cluster-a"},
        "status": {
            "listenerId": LIS_ID,
            "conditions": [condition("Ready", "True", "Available")],
            **status,
        },
    }


def kube_object(kind: str, name: str, **rest: Any) -> dict[str, Any]:
    return {"kind": kind, "metadata": {"name": name, "creationTimestamp": OLD}, **rest}


WORKLOADS = [
    kube_object("Service", "bot-11111111", spec={"type": "ClusterIP"}),
    kube_object(
        "StatefulSet", "bot-11111111-db", spec={"replicas": 1}, status={"readyReplicas": 0}
    ),
    kube_object("Deployment", "bot-11111111", spec={"replicas": 2}, status={"readyReplicas": 2}),
    kube_object("ConfigMap", "bot-11111111", data={"revision-id": REV_ID}),
    kube_object(
        "HorizontalPodAutoscaler",
        "bot-11111111",
        spec={"minReplicas": 2, "maxReplicas": 5},
        status={
            "currentReplicas": 2,
            "conditions": [condition("ScalingActive", "True", "ValidMetricFound")],
        },
    ),
]


def full_tree(workloads: Sequence[Mapping[str, Any]] | Missing = WORKLOADS) -> Node:
    return build_agentdeployment(
        agd(),
        Deployment.model_validate(deployment(source_config={"listener_id": LIS_ID})),
        {REV_ID: Revision.model_validate(revision())},
        Listener.model_validate(listener()),
        listener_cr(),
        Workloads("team-a", workloads),
    )


def table(tree: Node, width: int | None, *, wide: bool = False) -> str:
    return "\n".join(render(COLUMNS, rows(tree, AT), width, wide=wide).lines) + "\n"


GOLDEN_200 = """\
NAME                                              STATUS    REASON             AGE
AgentDeployment/bot                               Ready     Available          5h25m
└─ Deployment/agent-one                           READY     -                  3h25m
   ├─ Revision/22222222 (latest,active)           DEPLOYED  -                  3h25m
   └─ Listener/cluster-a                          Ready     Available          3h25m
      └─ Namespace/team-a                         Found     5 objects          -
         ├─ ConfigMap/bot-11111111                Applied   revision 22222222  5h25m
         ├─ Deployment/bot-11111111               Ready     2/2 ready          5h25m
         ├─ StatefulSet/bot-11111111-db           NotReady  0/1 ready          5h25m
         ├─ Service/bot-11111111                  Ready     ClusterIP          5h25m
         └─ HorizontalPodAutoscaler/bot-11111111  Active    ValidMetricFound   5h25m
"""


def test_golden_at_200_80_and_60_columns() -> None:
    tree = full_tree()
    wide = table(tree, 200)
    at_80 = table(tree, 80)
    at_60 = table(tree, 60)
    assert wide == GOLDEN_200
    assert at_80 == GOLDEN_80
    assert at_60 == GOLDEN_60
    for text, width in ((at_80, 80), (at_60, 60)):
        assert all(len(line) <= width for line in text.splitlines())


# At 80 AGE goes first (drop rank 1), at 60 REASON too; never a cut value.
GOLDEN_80 = """\
NAME                                              STATUS    REASON
AgentDeployment/bot                               Ready     Available
└─ Deployment/agent-one                           READY     -
   ├─ Revision/22222222 (latest,active)           DEPLOYED  -
   └─ Listener/cluster-a                          Ready     Available
      └─ Namespace/team-a                         Found     5 objects
         ├─ ConfigMap/bot-11111111                Applied   revision 22222222
         ├─ Deployment/bot-11111111               Ready     2/2 ready
         ├─ StatefulSet/bot-11111111-db           NotReady  0/1 ready
         ├─ Service/bot-11111111                  Ready     ClusterIP
         └─ HorizontalPodAutoscaler/bot-11111111  Active    ValidMetricFound
"""
GOLDEN_60 = """\
NAME                                              STATUS
AgentDeployment/bot                               Ready
└─ Deployment/agent-one                           READY
   ├─ Revision/22222222 (latest,active)           DEPLOYED
   └─ Listener/cluster-a                          Ready
      └─ Namespace/team-a                         Found
         ├─ ConfigMap/bot-11111111                Applied
         ├─ Deployment/bot-11111111               Ready
         ├─ StatefulSet/bot-11111111-db           NotReady
         ├─ Service/bot-11111111                  Ready
         └─ HorizontalPodAutoscaler/bot-11111111  Active
"""


def test_wide_adds_the_ids_and_messages_whole() -> None:
    lines = table(full_tree(), 80, wide=True).splitlines()
    assert lines[0].split() == ["NAME", "STATUS", "REASON", "AGE", "ID", "MESSAGE"]
    assert any(line.startswith("└─ Deployment/agent-one") and DEP_ID in line for line in lines)
    assert any(line.startswith("   ├─ Revision/22222222") and REV_ID in line for line in lines)
    assert lines[-1].endswith("  2 replicas, 2..5")  # the HPA's message, whole


def names(tree: Node) -> list[tuple[str, str, str]]:
    found = [(f"{tree.kind}/{tree.name}", tree.status, tree.reason)]
    for child in tree.children:
        found += names(child)
    return found


def test_a_resource_without_an_id_yet_is_a_line_with_the_reason() -> None:
    missing = Missing("NoId", "the operator has not created or found it yet")
    tree = build_agentdeployment(agd(deploymentId=None), missing, {}, None, None, missing)
    assert names(tree) == [
        ("AgentDeployment/bot", "Ready", "Available"),
        ("Deployment/-", "Missing", "NoId"),
    ]


def test_a_deployment_gone_from_the_control_plane_is_a_line_not_an_error() -> None:
    gone = Missing("NotFound", f"deployment {DEP_ID} not found on the control plane")
    obj = agd(
        conditions=[
            condition("Synced", "False", "NotFound", "gone"),
            condition("Ready", "False", "Unavailable"),
        ]
    )
    tree = build_agentdeployment(obj, gone, {}, None, None, Missing("NoListener"))
    assert names(tree) == [
        ("AgentDeployment/bot", "NotReady", "NotFound"),  # Synced's reason: the cause
        ("Deployment/-", "Missing", "NotFound"),
    ]
    assert tree.message == "gone"


def test_latest_and_active_revisions_apart_and_an_owner_behind() -> None:
    dep = Deployment.model_validate(
        deployment(latest_revision_id=NEW_REV, source_config={"listener_id": LIS_ID})
    )
    revisions: dict[str, Revision | Missing] = {
        NEW_REV: Revision.model_validate({**revision("DEPLOYING"), "id": NEW_REV}),
        REV_ID: Missing("Http500", "server error"),
    }
    owner = kube_object("ConfigMap", "bot-11111111", data={"revision-id": NEW_REV})
    tree = build_agentdeployment(
        agd(),
        dep,
        revisions,
        Listener.model_validate(listener()),
        None,  # no Listener resource: the control plane's listener alone
        Workloads("team-a", [owner]),
    )
    assert names(tree)[2:] == [
        ("Revision/55555555 (latest)", "DEPLOYING", ""),
        ("Revision/22222222 (active)", "Missing", "Http500"),
        ("Listener/cluster-a", "Registered", ""),
        ("Namespace/team-a", "Found", "1 objects"),
        ("ConfigMap/bot-11111111", "Behind", "revision 55555555"),
    ]


def test_no_listener_and_unreachable_workloads() -> None:
    dep = Deployment.model_validate(deployment())
    rev = {REV_ID: Revision.model_validate(revision())}
    cloud = build_agentdeployment(agd(), dep, rev, None, None, Missing("NoListener"))
    assert names(cloud)[-1] == ("Listener/(none)", "-", "NoListener")
    far = build_agentdeployment(
        agd(),
        dep,
        rev,
        Listener.model_validate(listener()),
        listener_cr(),
        Workloads("team-a", Missing("NotReachable", "list ConfigMap in team-a: 403 Forbidden")),
    )
    assert names(far)[-1] == ("Namespace/team-a", "Unreachable", "NotReachable")
    empty = build_agentdeployment(
        agd(), dep, rev, Listener.model_validate(listener()), None, Workloads("team-a", [])
    )
    assert names(empty)[-1] == ("Namespace/team-a", "Missing", "NoWorkloads")


def test_a_headless_service_says_so() -> None:
    db = kube_object("Service", "bot-11111111-db", spec={"type": "ClusterIP", "clusterIP": "None"})
    tree = build_listener(
        listener_cr(), Listener.model_validate(listener()), [Workloads("a", [db])]
    )
    assert names(tree)[-1] == ("Service/bot-11111111-db", "Ready", "Headless")


def test_listener_tree_and_its_data() -> None:
    tree = build_listener(
        listener_cr(),
        Listener.model_validate(listener()),
        [Workloads("team-a", WORKLOADS[:1])],
    )
    assert table(tree, 80) == (
        "NAME                           STATUS      REASON     AGE\n"
        "Listener/edge                  Ready       Available  5h25m\n"
        "└─ Listener/cluster-a          Registered  -          3h25m\n"
        "   └─ Namespace/team-a         Found       1 objects  -\n"
        "      └─ Service/bot-11111111  Ready       ClusterIP  5h25m\n"
    )
    data = to_data(tree)
    assert data["children"][0]["id"] == LIS_ID
    assert data["children"][0]["created"] == "2025-01-02T03:04:05+00:00"
    assert data["children"][0]["children"][0]["children"][0]["reason"] == "ClusterIP"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("agd/bot", None), ("AgentDeployment", "bot")),
        (("agentdeployments/bot", None), ("AgentDeployment", "bot")),
        (("AgentDeployment.deployplane.io/bot", None), ("AgentDeployment", "bot")),
        (("agentdep", "bot"), ("AgentDeployment", "bot")),
        (("listener/edge", None), ("Listener", "edge")),
        (("dpl/edge", None), ("Listener", "edge")),
    ],
)
def test_kubectl_names_of_the_kinds(
    args: tuple[str, str | None], expected: tuple[str, str]
) -> None:
    assert trace_command.parse_reference(*args) == expected


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("pod/x", None), "cannot trace 'pod': give one of agentdeployment, listener"),
        (("agd", None), "give KIND/NAME or KIND NAME, not 'agd'"),
        (("agd/a/b", None), "a name has no '/': 'a/b'"),
        (("agd", "a/b"), "a name has no '/': 'a/b'"),
    ],
)
def test_bad_references(args: tuple[str, str | None], message: str) -> None:
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(")):
        trace_command.parse_reference(*args)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("garbage: [\n", "kubeconfig: not valid YAML: while parsing a flow node"),
        ("contexts: 5\ncurrent-context: a\n", "kubeconfig: not a kubeconfig (TypeError"),
        ("- a\n- b\n", "kubeconfig: not a kubeconfig (TypeError"),
    ],
)
def test_a_broken_kubeconfig_is_one_line_not_a_traceback(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(text)
    with pytest.raises(KubeError, match="^" + re.escape(message)) as info:
        KubeAccess.load(str(path), None)
    assert "\n" not in str(info.value)


# ---------------------------------------------------------------- the command


class FakeKube:
    """KubeAccess' reads over dicts, recording every call (all reads by construction:
    the fake has no other method, so a write would fail the test with AttributeError)."""

    namespace = "team"

    def __init__(self, objects: dict[tuple[str, str], dict[str, Any]]) -> None:
        self.objects = objects
        self.secrets: dict[str, dict[str, str]] = {}
        self.workloads: list[Mapping[str, Any]] | KubeError = list(WORKLOADS)
        self.calls: list[str] = []

    def custom_resource(self, plural: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        self.calls.append(f"get {plural}/{name} -n {namespace}")
        return self.objects.get((plural, name))

    def secret_data(self, namespace: str, name: str) -> Mapping[str, str] | None:
        self.calls.append(f"get secret/{name} -n {namespace}")
        return self.secrets.get(name)

    def list_labelled(self, namespace: str, selector: str) -> list[Mapping[str, Any]]:
        self.calls.append(f"list -n {namespace} -l {selector}")
        if isinstance(self.workloads, KubeError):
            raise self.workloads
        return self.workloads


@pytest.fixture
def kube(monkeypatch: pytest.MonkeyPatch) -> FakeKube:
    fake = FakeKube({("agentdeployments", "bot"): agd(), ("listeners", "edge"): listener_cr()})
    monkeypatch.setattr(KubeAccess, "load", classmethod(lambda cls, path, context: fake))
    monkeypatch.setattr(tables, "now", lambda: AT)
    return fake


def cp_routes(service: FakeService) -> None:
    service.on(
        "GET",
        f"/v2/deployments/{DEP_ID}",
        [httpx.Response(200, json=deployment(source_config={"listener_id": LIS_ID}))],
    )
    service.on(
        "GET",
        f"/v2/deployments/{DEP_ID}/revisions/{REV_ID}",
        [httpx.Response(200, json=revision())],
    )
    service.on("GET", f"/v2/listeners/{LIS_ID}", [httpx.Response(200, json=listener())])


def invoke(*args: str, width: int = 200) -> Result:
    return CliRunner().invoke(root_app, ["trace", *args], env={"COLUMNS": str(width)})


def test_trace_prints_the_tree_with_gets_only(service: FakeService, kube: FakeKube) -> None:
    cp_routes(service)
    result = invoke("agd/bot", "-n", "team")
    assert result.exit_code == 0, result.output
    assert result.stdout == GOLDEN_200
    assert {r.method for r in service.requests} == {"GET"}
    assert [r.url.path for r in service.requests] == [
        f"/v2/deployments/{DEP_ID}",
        f"/v2/deployments/{DEP_ID}/revisions/{REV_ID}",
        f"/v2/listeners/{LIS_ID}",
    ]
    assert kube.calls == [
        "get agentdeployments/bot -n team",
        "get listeners/edge -n team",
        "get controlplaneconnections/default -n team",  # none: the CLI's own connection
        f"list -n team-a -l deployplane.io/deployment-id={DEP_ID}",
    ]


def test_trace_json_is_the_tree(service: FakeService, kube: FakeKube) -> None:
    cp_routes(service)
    result = invoke("agentdeployment", "bot", "-o", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == to_data(full_tree())


def test_missing_resource_exits_1_with_one_line(service: FakeService, kube: FakeKube) -> None:
    result = invoke("agd/nope", "-n", "team")
    assert result.exit_code == 1
    assert result.stderr == "error: agentdeployment nope not found in namespace team\n"
    assert service.requests == []


def test_control_plane_404_and_unreachable_cluster_still_exit_0(
    service: FakeService, kube: FakeKube
) -> None:
    kube.workloads = KubeError("list ConfigMap in team-a: 403 Forbidden")
    result = invoke("agd/bot", "-o", "yaml")
    assert result.exit_code == 0, result.output
    assert "reason: NotFound" in result.stdout  # no route in the fake: a 404
    assert "error" not in result.stderr


def test_connection_ref_secret_is_the_control_plane(service: FakeService, kube: FakeKube) -> None:
    obj = agd()
    obj["spec"]["connectionRef"] = {"name": "cp"}
    kube.objects[("agentdeployments", "bot")] = obj
    kube.secrets["cp"] = {"url": "http://other.test", "apiKey": "k", "tenantId": "t"}
    cp_routes(service)
    result = invoke("agd/bot")
    assert result.exit_code == 0, result.output
    assert {r.url.host for r in service.requests} == {"other.test"}
    assert service.requests[0].headers["X-Api-Key"] == "k"
    assert "get secret/cp -n team" in kube.calls


def test_without_a_control_plane_url_the_kubernetes_side_still_shows(
    service: FakeService, kube: FakeKube, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.delenv("DEPLOYPLANE_CONTROL_PLANE_URL")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))  # no config file, no context
    result = invoke("agd/bot")
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    assert result.stdout.splitlines()[2].split()[:3] == ["└─", "Deployment/-", "Missing"]
    assert "NoConnection" in result.stdout


def test_a_missing_connection_secret_is_a_line(service: FakeService, kube: FakeKube) -> None:
    obj = agd()
    obj["spec"]["connectionRef"] = {"name": "gone"}
    kube.objects[("agentdeployments", "bot")] = obj
    result = invoke("agd/bot", "-o", "json")
    assert result.exit_code == 0, result.output
    [child] = json.loads(result.stdout)["children"]
    assert (child["status"], child["reason"]) == ("Missing", "ConnectionNotFound")
    assert child["message"] == "no ControlPlaneConnection or Secret named gone"
    assert service.requests == []


def test_a_control_plane_connection_is_the_control_plane(
    service: FakeService, kube: FakeKube
) -> None:
    """connectionRef names a ControlPlaneConnection; with none, the namespace's
    `default` one is used before the CLI's own connection."""
    kube.objects[("controlplaneconnections", "default")] = {
        "metadata": {"name": "default"},
        "spec": {
            "url": "http://other.test",
            "tenantId": "t",
            "apiKeySecretRef": {"name": "key", "key": "token"},
        },
    }
    kube.secrets["key"] = {"token": "k2"}
    cp_routes(service)
    result = invoke("agd/bot")
    assert result.exit_code == 0, result.output
    assert {r.url.host for r in service.requests} == {"other.test"}
    assert service.requests[0].headers["X-Api-Key"] == "k2"
    assert service.requests[0].headers["X-Tenant-Id"] == "t"
    assert "get controlplaneconnections/default -n team" in kube.calls


def test_a_connection_named_but_missing_is_a_line(service: FakeService, kube: FakeKube) -> None:
    obj = agd()
    obj["spec"]["connectionRef"] = {"name": "cp", "kind": "ControlPlaneConnection"}
    kube.objects[("agentdeployments", "bot")] = obj
    kube.secrets["cp"] = {"url": "http://ignored.test"}  # kind says: not a Secret
    result = invoke("agd/bot", "-o", "json")
    [child] = json.loads(result.stdout)["children"]
    assert (child["reason"], child["message"]) == (
        "ConnectionNotFound",
        "ControlPlaneConnection cp not found",
    )
    assert service.requests == []
