"""The CRDs on a real kube-apiserver: valid manifests are accepted, bad ones refused.

Every rule of ARCHITECTURE.md ("Custom resources") is enforced by the apiserver itself
(OpenAPI schema + CEL `x-kubernetes-validations`), so `kubectl apply` refuses a bad spec
before the operator ever sees it. The corpus below is a table of
`(case_id, manifest or update, expected substring)`; the substring names the field, so
a refusal for some other reason (a broken base manifest, a different rule) fails.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from deployplane.crdgen.schema import OUTPUT_DIRS, rendered_files
from deployplane.devcluster.manifests import Applier
from deployplane.externals.agentdeployment import AgentDeploymentReason as ADReason
from deployplane.kinds.agentdeployment.status import AgentDeploymentStatus, RevisionStatusView
from deployplane.kinds.listener.status import ListenerStatus
from deployplane.kube.paths import GROUP, VERSION
from deployplane.reconcile.conditions import TRUE, ConditionType, Reason, set_condition
from deployplane.reconcile.status import to_kube as status_dict

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
# Named, not globbed: crds/ also holds files that are not CRDs (kustomization.yaml).
CRD_FILES = sorted(ROOT / p for p in rendered_files() if p.startswith(f"{OUTPUT_DIRS[0]}/"))
PLURALS = {
    "AgentDeployment": "agentdeployments",
    "ControlPlaneConnection": "controlplaneconnections",
    "Listener": "listeners",
}

Obj = dict[str, Any]


def _example(name: str) -> Obj:
    doc: Obj = yaml.safe_load((EXAMPLES / name).read_text())
    return doc


GIT = _example("agentdeployment-git.yaml")
DOCKER = _example("agentdeployment-docker.yaml")
LISTENER = _example("listener.yaml")
SECRET = _example("secret.yaml")
CONNECTION = next(
    d
    for d in yaml.safe_load_all((EXAMPLES / "controlplaneconnection.yaml").read_text())
    if d["kind"] == "ControlPlaneConnection"
)

UUID_A = "11111111-1111-1111-1111-111111111111"
UUID_B = "33333333-3333-3333-3333-333333333333"


# ------------------------------------------------------------------------ setup


@pytest.fixture(scope="module")
def crds_installed(k8s_api: client.ApiClient) -> list[Obj]:
    """The committed CRD files (what users install), applied once for this module.

    Not deleted afterwards: deleting a CRD is asynchronous (its objects are removed
    first), and a later module applying the same CRD meanwhile would be refused.
    For the same reason a CRD still terminating from an earlier module is waited out.
    """
    extensions = client.ApiextensionsV1Api(k8s_api)
    docs = [yaml.safe_load(path.read_text()) for path in CRD_FILES]
    for doc in docs:
        deadline = time.monotonic() + 60
        while True:
            try:
                current = extensions.read_custom_resource_definition(doc["metadata"]["name"])
            except ApiException as e:
                if e.status == 404:
                    break
                raise
            if current.metadata.deletion_timestamp is None:
                break
            assert time.monotonic() < deadline, f"{doc['metadata']['name']} still terminating"
            time.sleep(0.2)
    return Applier(k8s_api).apply(docs)


@pytest.fixture
def custom(k8s_api: client.ApiClient, crds_installed: list[Obj]) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(k8s_api)


def _create(api: client.CustomObjectsApi, namespace: str, obj: Obj) -> Obj:
    result: Obj = api.create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURALS[obj["kind"]], obj
    )
    return result


def _replace_spec(api: client.CustomObjectsApi, namespace: str, obj: Obj, spec: Obj) -> Obj:
    """PUT the object with a new spec (a full replace: removals are removals)."""
    plural = PLURALS[obj["kind"]]
    name = obj["metadata"]["name"]
    current = api.get_namespaced_custom_object(GROUP, VERSION, namespace, plural, name)
    current["spec"] = spec
    result: Obj = api.replace_namespaced_custom_object(
        GROUP, VERSION, namespace, plural, name, current
    )
    return result


def _refusal(call: Callable[[], object]) -> str:
    """The apiserver's message for a refused request (fails if it was accepted)."""
    with pytest.raises(ApiException) as refused:
        call()
    assert refused.value.status == 422, f"expected 422 Invalid: {refused.value.body}"
    message: str = json.loads(refused.value.body)["message"]
    return message


# --------------------------------------------------------------------- builders

_DELETE = object()


def _edit(base: Obj, changes: dict[str, Any]) -> Obj:
    """A copy of `base` with dotted spec paths set (or removed with `_DELETE`)."""
    obj = copy.deepcopy(base)
    for path, value in changes.items():
        *parents, leaf = path.split(".")
        node = obj
        for part in parents:
            node = node.setdefault(part, {})
        if value is _DELETE:
            node.pop(leaf, None)
        else:
            node[leaf] = value
    return obj


def agd(base: Obj, **changes: Any) -> Obj:
    """An AgentDeployment from an example; keys are spec paths with `__` for dots."""
    return _edit(base, {"spec." + k.replace("__", "."): v for k, v in changes.items()})


def listener(**changes: Any) -> Obj:
    return agd(LISTENER, **changes)


def connection(**changes: Any) -> Obj:
    return agd(CONNECTION, **changes)


@dataclass(frozen=True)
class Update:
    """Create `before`, then PUT `after`'s spec: the update must be refused."""

    before: Obj
    after: Obj
    created: bool = False
    """The operator has recorded the remote object's id in the status before the PUT
    (what fixes the fields that name it: `crd.cel.fixed_once_created`)."""


ID_FIELDS = {"AgentDeployment": "deploymentId", "Listener": "listenerId"}
"""The status field that records the remote object's id, by kind."""


def _record_created(api: client.CustomObjectsApi, namespace: str, obj: Obj) -> None:
    """Write the status the operator writes once the remote object exists (its id)."""
    plural = PLURALS[obj["kind"]]
    name = obj["metadata"]["name"]
    current = api.get_namespaced_custom_object(GROUP, VERSION, namespace, plural, name)
    current["status"] = {"observedGeneration": 1, ID_FIELDS[obj["kind"]]: UUID_B}
    api.replace_namespaced_custom_object_status(GROUP, VERSION, namespace, plural, name, current)


GIT_BY_URL = agd(
    GIT,
    sourceConfig__repository=_DELETE,
    sourceConfig__repoUrl="https://git.example/acme/bot",
    sourceRevisionConfig__repoRef="main",
)
DOCKER_BY_ID = agd(DOCKER, sourceConfig__listenerRef=_DELETE, sourceConfig__listenerId=UUID_A)
NAMED = agd(DOCKER, name="support-bot-docker")
TYPED = agd(GIT_BY_URL, sourceConfig__deploymentType="dev")
PUBLISHED_DOCKER = agd(
    DOCKER,
    secretReferences=[{"name": "OPENAI_API_KEY", "secretName": "llm", "secretKey": "openai"}],
    sourceConfig__customUrl="https://bot.example.com",
    deleteTracingProject=True,
)
ADOPTING = agd(DOCKER, deploymentId=UUID_A)
ADOPTING_LISTENER = listener(listenerId=UUID_A)
SHARED_LISTENER = listener(
    allowedNamespaces={
        "from": "Selector",
        "selector": {
            "matchLabels": {"team": "a"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["prod"]}],
        },
    }
)
SHARED_LISTENER_REF = agd(DOCKER, sourceConfig__listenerRef__namespace="infra")
WRITING_OUTPUTS = agd(DOCKER, writeOutputsTo={"configMapName": "support-bot.outputs-1"})
FOR_AGENT = agd(DOCKER, agent={"agentId": "support-bot", "environment": "staging"})
FOUR_K = "x" * 4097
TAG = "refs/tags/v1.0.0"

# (case_id, manifest or Update, expected substring naming the field)
INVALID: list[tuple[str, Obj | Update, str]] = [
    # ---- ControlPlaneConnection, and naming one
    (
        "connection-url-not-http",
        connection(url="ftp://cp.example.com"),
        "spec.url must be an http:// or https:// URL",
    ),
    ("connection-url-missing", connection(url=_DELETE), "spec.url: Required value"),
    (
        "connection-key-without-key-name",
        connection(apiKeySecretRef={"name": "k"}),
        "spec.apiKeySecretRef.key: Required value",
    ),
    (
        "connection-ref-kind-unknown",
        agd(DOCKER, connectionRef={"name": "cp", "kind": "ConfigMap"}),
        'spec.connectionRef.kind: Unsupported value: "ConfigMap"',
    ),
    # ---- wrong types, bad enums, missing required fields (OpenAPI schema)
    ("no-spec", {**{k: v for k, v in GIT.items() if k != "spec"}}, "spec: Required value"),
    (
        "allowed-namespaces-selector-missing",
        listener(allowedNamespaces={"from": "Selector"}),
        "spec.allowedNamespaces.selector is required when from is Selector",
    ),
    (
        "allowed-namespaces-selector-without-selector-from",
        listener(allowedNamespaces={"from": "All", "selector": {"matchLabels": {"a": "b"}}}),
        "spec.allowedNamespaces.selector is only allowed when from is Selector",
    ),
    (
        "allowed-namespaces-bad-from",
        listener(allowedNamespaces={"from": "Some"}),
        'spec.allowedNamespaces.from: Unsupported value: "Some"',
    ),
    *(
        (
            f"outputs-configmap-name-{case}",
            agd(DOCKER, writeOutputsTo={"configMapName": name}),
            "spec.writeOutputsTo.configMapName must be a DNS-1123 subdomain",
        )
        for case, name in (
            ("uppercase", "Bot-Outputs"),
            ("underscore", "bot_outputs"),
            ("leading-dash", "-bot"),
            ("trailing-dot", "bot."),
        )
    ),
    (
        "outputs-configmap-name-empty",
        agd(DOCKER, writeOutputsTo={"configMapName": ""}),
        "spec.writeOutputsTo.configMapName: Invalid value",
    ),
    (
        "outputs-configmap-name-too-long",
        agd(DOCKER, writeOutputsTo={"configMapName": "a" * 254}),
        "spec.writeOutputsTo.configMapName: Too long: may not be more than 253",
    ),
    (
        "outputs-configmap-name-missing",
        agd(DOCKER, writeOutputsTo={}),
        "spec.writeOutputsTo.configMapName: Required value",
    ),
    (
        "listener-ref-bad-namespace",
        agd(DOCKER, sourceConfig__listenerRef__namespace="Team_A"),
        "spec.sourceConfig.listenerRef.namespace: Invalid value",
    ),
    ("source-missing", agd(GIT, source=_DELETE), "spec.source: Required value"),
    ("source-bad-enum", agd(GIT, source="gitlab"), 'spec.source: Unsupported value: "gitlab"'),
    ("source-wrong-type", agd(GIT, source=3), "spec.source: Invalid value"),
    (
        "deletion-policy-bad-enum",
        agd(GIT, deletionPolicy="Retain"),
        'spec.deletionPolicy: Unsupported value: "Retain"',
    ),
    (
        "update-policy-bad-enum",
        agd(GIT, updatePolicy="OnApproval"),
        'spec.updatePolicy: Unsupported value: "OnApproval"',
    ),
    (
        "build-on-push-not-bool",
        agd(GIT, sourceConfig__buildOnPush="yes"),
        "spec.sourceConfig.buildOnPush: Invalid value",
    ),
    (
        "cpu-not-a-number",
        agd(DOCKER, sourceConfig__resourceSpec__cpu="one"),
        "spec.sourceConfig.resourceSpec.cpu: Invalid value",
    ),
    (
        "memory-negative",
        agd(DOCKER, sourceConfig__resourceSpec__memoryMb=-1),
        "spec.sourceConfig.resourceSpec.memoryMb: Invalid value",
    ),
    (
        "secrets-not-a-list",
        agd(GIT, secrets={"name": "x"}),
        "spec.secrets: Invalid value",
    ),
    (
        "secret-without-value-from",
        agd(GIT, secrets=[{"name": "OPENAI_API_KEY"}]),
        "spec.secrets[0].valueFrom: Required value",
    ),
    (
        "secret-key-ref-without-key",
        agd(GIT, secrets=[{"name": "K", "valueFrom": {"secretKeyRef": {"name": "llm-keys"}}}]),
        "spec.secrets[0].valueFrom.secretKeyRef.key: Required value",
    ),
    (
        "secret-names-duplicated",
        agd(GIT, secrets=[GIT["spec"]["secrets"][0], GIT["spec"]["secrets"][0]]),
        "spec.secrets[1]: Duplicate value",
    ),
    (
        "secrets-from-without-name",
        agd(DOCKER, secretsFrom=[{"secretRef": {}}]),
        "spec.secretsFrom[0].secretRef.name: Required value",
    ),
    (
        "listener-ref-without-name",
        agd(DOCKER, sourceConfig__listenerRef={}),
        "spec.sourceConfig.listenerRef.name: Required value",
    ),
    (
        "repository-without-owner",
        agd(GIT, sourceConfig__repository={"name": "support-bot"}),
        "spec.sourceConfig.repository.owner: Required value",
    ),
    ("name-empty", agd(GIT, name=""), "spec.name: Invalid value"),
    # ---- resource numbers: integers where the published contract says integer, its
    # bounds, and no minimum above its maximum or request above its limit (CEL)
    *(
        (
            f"{field}-fractional",
            agd(DOCKER, sourceConfig__resourceSpec={field: value}),
            f"spec.sourceConfig.resourceSpec.{field} in body must be of type integer",
        )
        for field, value in (
            ("minScale", 1.5),
            ("maxScale", 1.5),
            ("queueMinScale", 0.5),
            ("queueMaxScale", 2.5),
            ("orchestratorMaxScale", 1.25),
            ("memoryMb", 512.5),
            ("queueMemoryLimitMb", 0.1),
            ("redisMemoryMb", 64.5),
            ("dbStorageGi", 1.5),
            ("dbMaxConnections", 99.9),
        )
    ),
    (
        "min-scale-negative",
        agd(DOCKER, sourceConfig__resourceSpec={"minScale": -1}),
        "spec.sourceConfig.resourceSpec.minScale in body should be greater than or equal to 0",
    ),
    (
        "cpu-above-the-published-maximum",
        agd(DOCKER, sourceConfig__resourceSpec={"cpu": 8.5}),
        "spec.sourceConfig.resourceSpec.cpu in body should be less than or equal to 8",
    ),
    (
        "queue-cpu-below-the-published-minimum",
        agd(DOCKER, sourceConfig__resourceSpec={"queueCpu": 0.05}),
        "spec.sourceConfig.resourceSpec.queueCpu in body should be greater than or equal to 0.1",
    ),
    (
        "cpu-limit-above-the-published-maximum",
        agd(DOCKER, sourceConfig__resourceSpec={"cpuLimit": 17}),
        "spec.sourceConfig.resourceSpec.cpuLimit in body should be less than or equal to 16",
    ),
    *(
        (
            f"{low}-above-{high}",
            agd(DOCKER, sourceConfig__resourceSpec={low: above, high: below}),
            f"spec.sourceConfig.resourceSpec.{low}: Invalid value: "
            f"spec.sourceConfig.resourceSpec.{low} must not be above "
            f"spec.sourceConfig.resourceSpec.{high}",
        )
        for low, high, above, below in (
            ("minScale", "maxScale", 5, 3),
            ("queueMinScale", "queueMaxScale", 4, 1),
            ("orchestratorMinScale", "orchestratorMaxScale", 2, 1),
            ("cpu", "cpuLimit", 2, 1.5),
            ("memoryMb", "memoryLimitMb", 1024, 512),
            ("queueCpu", "queueCpuLimit", 1, 0.5),
            ("queueMemoryMb", "queueMemoryLimitMb", 256, 128),
            ("orchestratorCpu", "orchestratorCpuLimit", 2, 1),
            ("orchestratorMemoryMb", "orchestratorMemoryLimitMb", 256, 128),
            ("dbCpu", "dbCpuLimit", 1, 0.5),
            ("dbMemoryMb", "dbMemoryLimitMb", 512, 256),
        )
    ),
    (
        "cpu-above-an-integer-cpuLimit",
        agd(DOCKER, sourceConfig__resourceSpec={"cpu": 1.5, "cpuLimit": 1}),
        "spec.sourceConfig.resourceSpec.cpu must not be above "
        "spec.sourceConfig.resourceSpec.cpuLimit",
    ),
    # ---- malformed UUIDs
    (
        "integration-id-not-uuid",
        agd(GIT, sourceConfig__integrationId="not-a-uuid"),
        "spec.sourceConfig.integrationId",
    ),
    (
        "integration-id-no-dashes",
        agd(GIT, sourceConfig__integrationId="22222222222222222222222222222222"),
        "spec.sourceConfig.integrationId",
    ),
    (
        "integration-id-non-hex",
        agd(GIT, sourceConfig__integrationId="2222222g-2222-2222-2222-222222222222"),
        "spec.sourceConfig.integrationId",
    ),
    ("deployment-id-short", agd(DOCKER, deploymentId="1234"), "spec.deploymentId"),
    (
        "listener-id-braced",
        agd(DOCKER_BY_ID, sourceConfig__listenerId="{11111111-1111-1111-1111-11111111111}"),
        "spec.sourceConfig.listenerId",
    ),
    ("listener-adopt-id-not-uuid", listener(listenerId="zzz"), "spec.listenerId"),
    # ---- oversized values
    ("name-too-long", agd(GIT, name="n" * 254), "spec.name: Too long"),
    (
        "image-uri-too-long",
        agd(DOCKER, sourceRevisionConfig__imageUri=FOUR_K),
        "spec.sourceRevisionConfig.imageUri: Too long",
    ),
    (
        "repo-url-too-long",
        agd(GIT_BY_URL, sourceConfig__repoUrl=FOUR_K),
        "spec.sourceConfig.repoUrl: Too long",
    ),
    (
        "too-many-secrets",
        agd(
            GIT,
            secrets=[
                {"name": f"S{i}", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}
                for i in range(65)
            ],
        ),
        "spec.secrets: Too many",
    ),
    (
        "too-many-labels",
        agd(DOCKER, sourceConfig__resourceSpec__labels={f"l{i}": "v" for i in range(65)}),
        "spec.sourceConfig.resourceSpec.labels: Too many",
    ),
    (
        "owner-too-long",
        agd(GIT, sourceConfig__repository={"owner": "o" * 256, "name": "bot"}),
        "spec.sourceConfig.repository.owner: Too long",
    ),
    # ---- per-source required fields (CEL)
    (
        "git-without-integration",
        agd(GIT_BY_URL, sourceConfig__integrationId=_DELETE),
        "spec.sourceConfig.integrationId is required when spec.source is git_host",
    ),
    (
        "git-without-source-config",
        agd(GIT, sourceConfig=_DELETE),
        "spec.sourceConfig.integrationId is required when spec.source is git_host",
    ),
    (
        "git-without-repo",
        agd(GIT, sourceConfig__repository=_DELETE),
        "spec.sourceConfig.repoUrl or spec.sourceConfig.repository is required",
    ),
    (
        "git-with-empty-repo-url",
        agd(GIT, sourceConfig__repository=_DELETE, sourceConfig__repoUrl=""),
        "spec.sourceConfig.repoUrl or spec.sourceConfig.repository is required",
    ),
    # The control plane refuses a git_host deployment without repo_ref (422); only a
    # repository reference may leave it out (the operator takes its default branch).
    (
        "git-by-url-without-ref",
        agd(GIT_BY_URL, sourceRevisionConfig__repoRef=_DELETE),
        "spec.sourceRevisionConfig.repoRef is required when spec.source is git_host and "
        "spec.sourceConfig.repoUrl is given",
    ),
    (
        "git-by-url-with-empty-ref",
        agd(GIT_BY_URL, sourceRevisionConfig__repoRef=""),
        "spec.sourceRevisionConfig.repoRef is required when spec.source is git_host",
    ),
    (
        "git-ref-removed",
        Update(GIT_BY_URL, agd(GIT_BY_URL, sourceRevisionConfig__repoRef=_DELETE)),
        "spec.sourceRevisionConfig.repoRef is required when spec.source is git_host",
    ),
    (
        "git-with-empty-integration",
        agd(GIT_BY_URL, sourceConfig__integrationId=""),
        "spec.sourceConfig.integrationId",
    ),
    (
        "git-with-empty-graph-config-path",
        agd(GIT, sourceRevisionConfig__graphConfigPath=""),
        "spec.sourceRevisionConfig.graphConfigPath is required when spec.source is git_host",
    ),
    (
        "git-without-graph-config-path",
        agd(GIT, sourceRevisionConfig__graphConfigPath=_DELETE),
        "spec.sourceRevisionConfig.graphConfigPath is required when spec.source is git_host",
    ),
    (
        "git-without-revision-config",
        agd(GIT, sourceRevisionConfig=_DELETE),
        "spec.sourceRevisionConfig.graphConfigPath is required when spec.source is git_host",
    ),
    (
        "repository-without-integration",
        agd(GIT, sourceConfig__integrationId=_DELETE),
        "spec.sourceConfig.integrationId is required when spec.sourceConfig.repository is set",
    ),
    (
        "docker-without-image",
        agd(DOCKER, sourceRevisionConfig__imageUri=_DELETE),
        "spec.sourceRevisionConfig.imageUri is required when spec.source is external_docker",
    ),
    (
        "docker-with-empty-image",
        agd(DOCKER, sourceRevisionConfig__imageUri=""),
        "spec.sourceRevisionConfig.imageUri is required when spec.source is external_docker",
    ),
    (
        "docker-without-revision-config",
        agd(DOCKER, sourceRevisionConfig=_DELETE),
        "spec.sourceRevisionConfig.imageUri is required when spec.source is external_docker",
    ),
    # ---- per-source forbidden fields (CEL)
    (
        "git-with-image",
        agd(GIT, sourceRevisionConfig__imageUri="registry.example.com/x:1"),
        "spec.sourceRevisionConfig.imageUri is not allowed when spec.source is git_host",
    ),
    *(
        (
            f"docker-with-{path.rsplit('.', 1)[1]}",
            agd(DOCKER, **{path.replace(".", "__"): value}),
            f"spec.{path} is not allowed when spec.source is external_docker",
        )
        for path, value in [
            ("sourceConfig.integrationId", UUID_A),
            ("sourceConfig.repoUrl", "https://git.example/acme/bot"),
            ("sourceConfig.repository", {"owner": "acme", "name": "bot"}),
            ("sourceConfig.buildOnPush", False),
            ("sourceRevisionConfig.repoRef", "main"),
            ("sourceRevisionConfig.graphConfigPath", "langgraph.json"),
            ("sourceConfig.deploymentType", "dev"),
        ]
    ),
    (
        "git-with-secret-references",
        agd(GIT, secretReferences=[{"name": "K", "secretName": "s", "secretKey": "k"}]),
        "spec.secretReferences is not allowed when spec.source is git_host",
    ),
    (
        "git-with-custom-url",
        agd(GIT, sourceConfig__customUrl="https://mine.example"),
        "spec.sourceConfig.customUrl is not allowed when spec.source is git_host",
    ),
    (
        "deployment-type-bad-enum",
        agd(GIT, sourceConfig__deploymentType="huge"),
        'spec.sourceConfig.deploymentType: Unsupported value: "huge"',
    ),
    (
        "secret-reference-without-key",
        agd(DOCKER, secretReferences=[{"name": "K", "secretName": "s"}]),
        "spec.secretReferences[0].secretKey: Required value",
    ),
    # ---- forbidden combinations (CEL)
    (
        "tag-with-build-on-push",
        agd(GIT, sourceRevisionConfig__repoRef=TAG, sourceConfig__buildOnPush=True),
        "spec.sourceConfig.buildOnPush must be false when spec.sourceRevisionConfig.repoRef "
        "is a tag",
    ),
    (
        "listener-ref-and-listener-id",
        agd(DOCKER, sourceConfig__listenerId=UUID_A),
        "spec.sourceConfig.listenerRef and spec.sourceConfig.listenerId are mutually exclusive",
    ),
    # ---- Listener schema
    (
        "listener-compute-type-bad-enum",
        listener(computeType="ecs"),
        'spec.computeType: Unsupported value: "ecs"',
    ),
    ("listener-compute-id-missing", listener(computeId=_DELETE), "spec.computeId: Required"),
    ("listener-compute-id-empty", listener(computeId=""), "spec.computeId: Invalid value"),
    ("listener-compute-id-too-long", listener(computeId="c" * 254), "spec.computeId: Too long"),
    (
        "listener-namespaces-not-a-list",
        listener(computeConfig={"k8sNamespaces": "agents"}),
        "spec.computeConfig.k8sNamespaces: Invalid value",
    ),
    (
        "listener-namespace-too-long",
        listener(computeConfig={"k8sNamespaces": ["n" * 64]}),
        "spec.computeConfig.k8sNamespaces[0]: Too long",
    ),
    ("listener-version-too-long", listener(version="v" * 254), "spec.version: Too long"),
    (
        "listener-deletion-policy-bad-enum",
        listener(deletionPolicy="Keep"),
        'spec.deletionPolicy: Unsupported value: "Keep"',
    ),
    # ---- spec.agent: a deployment keyed by an agent and an environment
    (
        "agent-environment-bad-enum",
        agd(FOR_AGENT, agent__environment="qa"),
        'spec.agent.environment: Unsupported value: "qa"',
    ),
    ("agent-id-missing", agd(FOR_AGENT, agent__agentId=_DELETE), "spec.agent.agentId: Required"),
    ("agent-id-blank-end", agd(FOR_AGENT, agent__agentId="bot "), "spec.agent.agentId"),
    ("agent-id-too-long", agd(FOR_AGENT, agent__agentId="a" * 129), "spec.agent.agentId: Too long"),
    (
        "agent-with-name",
        agd(FOR_AGENT, name="support-bot"),
        "spec.agent and spec.name are mutually exclusive",
    ),
    # ---- fields that name the remote object, fixed once it exists (rules on the whole
    # object, keyed on the id in the status), refused on update
    *(
        (case_id, Update(before, after, created=True), message)
        for case_id, before, after, message in (
            (
                "name-changed",
                NAMED,
                agd(NAMED, name="other-name"),
                "spec.name: Invalid value: spec.name cannot be added, removed or "
                "changed once the deployment exists on the control plane (status.deploymentId "
                "is set)",
            ),
            ("name-added", DOCKER, NAMED, "spec.name cannot be added, removed or changed once"),
            (
                "name-removed",
                NAMED,
                agd(NAMED, name=_DELETE),
                "spec.name cannot be added, removed or changed once",
            ),
            (
                "agent-environment-changed",
                FOR_AGENT,
                agd(FOR_AGENT, agent__environment="production"),
                "spec.agent: Invalid value: spec.agent cannot be added, removed or changed "
                "once the deployment exists on the control plane (status.deploymentId is set)",
            ),
            (
                "agent-id-changed",
                FOR_AGENT,
                agd(FOR_AGENT, agent__agentId="other-bot"),
                "spec.agent cannot be added, removed or changed once",
            ),
            (
                "agent-added",
                DOCKER,
                FOR_AGENT,
                "spec.agent cannot be added, removed or changed once",
            ),
            (
                "agent-removed",
                FOR_AGENT,
                DOCKER,
                "spec.agent cannot be added, removed or changed once",
            ),
            ("source-changed", GIT_BY_URL, DOCKER, "spec.source cannot change once"),
            (
                "deployment-type-changed",
                TYPED,
                agd(TYPED, sourceConfig__deploymentType="prod"),
                "spec.sourceConfig.deploymentType cannot be added, removed or changed once",
            ),
            (
                "deployment-type-added",
                GIT_BY_URL,
                TYPED,
                "spec.sourceConfig.deploymentType cannot be added, removed or changed once",
            ),
            (
                "deployment-id-changed",
                ADOPTING,
                agd(ADOPTING, deploymentId=UUID_B),
                "spec.deploymentId cannot be removed or changed once",
            ),
            (
                "deployment-id-removed",
                ADOPTING,
                agd(ADOPTING, deploymentId=_DELETE),
                "spec.deploymentId cannot be removed or changed once",
            ),
            (
                "listener-compute-id-changed",
                LISTENER,
                listener(computeId="other-cluster"),
                "spec.computeId: Invalid value: spec.computeId cannot change once "
                "the listener exists on the control plane (status.listenerId is set)",
            ),
            (
                "listener-adopt-id-changed",
                ADOPTING_LISTENER,
                listener(listenerId=UUID_B),
                "spec.listenerId cannot be removed or changed once",
            ),
            (
                "listener-adopt-id-removed",
                ADOPTING_LISTENER,
                listener(listenerId=_DELETE),
                "spec.listenerId cannot be removed or changed once",
            ),
        )
    ),
]


def _case_ids() -> Iterator[str]:
    for case_id, _, _ in INVALID:
        yield case_id


def test_corpus_is_large_and_unambiguous() -> None:
    ids = list(_case_ids())
    assert len(ids) >= 40
    assert len(set(ids)) == len(ids)


# ------------------------------------------------------------------------ tests


def test_crds_are_established_with_their_cel_rules(crds_installed: list[Obj]) -> None:
    # Established means the apiserver compiled every CEL rule within its cost budget.
    assert sorted(c["metadata"]["name"] for c in crds_installed) == [
        "agentdeployments.deployplane.io",
        "controlplaneconnections.deployplane.io",
        "listeners.deployplane.io",
    ]


@pytest.mark.parametrize(
    "example",
    [
        "listener.yaml",
        "agentdeployment-docker.yaml",
        "agentdeployment-git.yaml",
        "controlplaneconnection.yaml",
    ],
)
def test_examples_are_accepted(
    example: str, crds_installed: list[Obj], apply_manifest: Any, namespace: str
) -> None:
    apply_manifest((EXAMPLES / "secret.yaml").read_text())
    text = (EXAMPLES / example).read_text()
    (applied,) = [d for d in apply_manifest(text) if d["kind"] != "Secret"]
    (expected,) = [d for d in yaml.safe_load_all(text) if d["kind"] != "Secret"]
    # Nothing pruned: every field of the example survived the schema.
    for key, value in expected["spec"].items():
        assert applied["spec"][key] == value, key


@pytest.mark.parametrize(
    "manifest",
    [
        GIT_BY_URL,
        DOCKER_BY_ID,
        NAMED,
        ADOPTING,
        ADOPTING_LISTENER,
        TYPED,
        PUBLISHED_DOCKER,
        SHARED_LISTENER,
        SHARED_LISTENER_REF,
        WRITING_OUTPUTS,
        FOR_AGENT,
    ],
    ids=[
        "git-by-repo-url",
        "docker-by-listener-id",
        "named",
        "adopting",
        "adopting-listener",
        "git-deployment-type",
        "docker-secret-references-custom-url",
        "listener-shared-by-selector",
        "listener-ref-in-another-namespace",
        "writing-outputs-to-a-configmap",
        "for-an-agent",
    ],
)
def test_valid_variants_are_accepted(
    manifest: Obj, custom: client.CustomObjectsApi, namespace: str
) -> None:
    created = _create(custom, namespace, manifest)
    assert created["spec"]["deletionPolicy"] == "Delete"  # defaulted or kept


@pytest.mark.parametrize(
    "resources",
    [
        {"minScale": 3, "maxScale": 3},
        {"minScale": 0, "maxScale": 0},
        {"minScale": 5},  # no maximum: nothing to compare
        {"maxScale": 2.0},  # a whole number written as one with a point (YAML 2.0)
        {"queueMinScale": 0, "queueMaxScale": 10},
        {"orchestratorMinScale": 1, "orchestratorMaxScale": 1},
        {"cpu": 0.1, "cpuLimit": 16},
        {"cpu": 8, "cpuLimit": 8},
        {"cpu": 0.5, "cpuLimit": 1},
        {"memoryMb": 512, "memoryLimitMb": 512},
        {"queueCpu": 1.5, "queueCpuLimit": 2, "queueMemoryMb": 1, "queueMemoryLimitMb": 2},
        {"dbCpu": 0.25, "dbCpuLimit": 0.5, "dbMemoryMb": 0, "dbMemoryLimitMb": 1},
        {"orchestratorCpu": 0, "orchestratorCpuLimit": 0},
        {"dbStorageGi": 10, "dbMaxConnections": 100, "redisMemoryMb": 64},
    ],
    ids=lambda resources: "-".join(f"{k}={v}" for k, v in resources.items()),
)
def test_resource_numbers_next_to_a_refusal_are_accepted(
    resources: Obj, custom: client.CustomObjectsApi, namespace: str
) -> None:
    """The valid neighbours of the refusals above: equal bounds, the published bounds
    themselves, integers given to number fields."""
    created = _create(custom, namespace, agd(DOCKER, sourceConfig__resourceSpec=resources))
    kept = created["spec"]["sourceConfig"]["resourceSpec"]
    assert kept == {key: int(v) if v == int(v) else v for key, v in resources.items()}


def test_connections_and_references_to_them_are_accepted(
    custom: client.CustomObjectsApi, namespace: str
) -> None:
    keyless = connection(url="https://cp.example.com:8443/api", apiKeySecretRef=_DELETE)
    created = _create(custom, namespace, connection(tenantId=UUID_A))
    assert created["spec"]["tenantId"] == UUID_A
    assert _create(custom, namespace, {**keyless, "metadata": {"name": "keyless"}})
    for kind in ("ControlPlaneConnection", "Secret", None):
        ref = {"name": "cp", **({"kind": kind} if kind else {})}
        named = agd(DOCKER, connectionRef=ref)
        named["metadata"]["name"] = f"ref-{(kind or 'any').lower()}"
        assert _create(custom, namespace, named)["spec"]["connectionRef"] == ref


def test_default_deletion_policy_is_delete(custom: client.CustomObjectsApi, namespace: str) -> None:
    created = _create(custom, namespace, agd(DOCKER, deletionPolicy=_DELETE))
    assert created["spec"]["deletionPolicy"] == "Delete"


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (DOCKER, agd(DOCKER, sourceRevisionConfig__imageUri="registry.example.com/x:2")),
        (NAMED, agd(NAMED, sourceConfig__resourceSpec__cpu=2.5)),
        (ADOPTING, agd(ADOPTING, deletionPolicy="Orphan")),
        (DOCKER, agd(DOCKER, deploymentId=UUID_A)),
        (
            GIT,
            agd(GIT, sourceRevisionConfig__repoRef=TAG, sourceConfig__buildOnPush=False),
        ),
        (LISTENER, listener(version="0.2.0", computeConfig={"k8sNamespaces": ["a", "b"]})),
        (ADOPTING_LISTENER, listener(listenerId=UUID_A, version="1")),
        (TYPED, agd(TYPED, sourceRevisionConfig__repoRef="develop")),
        (FOR_AGENT, agd(FOR_AGENT, sourceRevisionConfig__imageUri="registry.example.com/x:2")),
    ],
    ids=[
        "image-changed",
        "resources-changed-name-kept",
        "policy-changed-id-kept",
        "adopt-later",
        "tag-without-build-on-push",
        "listener-mutable-fields",
        "listener-id-kept",
        "deployment-type-kept",
        "agent-kept-image-changed",
    ],
)
def test_allowed_updates_are_accepted(
    before: Obj, after: Obj, custom: client.CustomObjectsApi, namespace: str
) -> None:
    # The transition rules must not fire when the immutable fields are left alone.
    _create(custom, namespace, before)
    updated = _replace_spec(custom, namespace, before, after["spec"])
    defaults: dict[str, Any] = {"deletionPolicy": "Delete", "managementPolicy": "Full"}
    if after["kind"] == "AgentDeployment":
        defaults["deleteTracingProject"] = False
        defaults["updatePolicy"] = "Automatic"
    assert updated["spec"] == {**defaults, **after["spec"]}


@pytest.mark.parametrize(("case_id", "manifest", "expected"), INVALID, ids=list(_case_ids()))
def test_invalid_manifest_is_refused_naming_the_field(
    case_id: str,
    manifest: Obj | Update,
    expected: str,
    custom: client.CustomObjectsApi,
    namespace: str,
) -> None:
    if isinstance(manifest, Update):
        _create(custom, namespace, manifest.before)
        if manifest.created:
            _record_created(custom, namespace, manifest.before)
        message = _refusal(
            lambda: _replace_spec(custom, namespace, manifest.before, manifest.after["spec"])
        )
    else:
        message = _refusal(lambda: _create(custom, namespace, manifest))
    assert expected in message, f"{case_id}: {message}"


FIXED_ONCE_CREATED = [
    (case_id, manifest)
    for case_id, manifest, _ in INVALID
    if isinstance(manifest, Update) and manifest.created
]


@pytest.mark.parametrize(
    ("case_id", "update"), FIXED_ONCE_CREATED, ids=[c for c, _ in FIXED_ONCE_CREATED]
)
def test_a_field_naming_the_remote_object_is_correctable_until_it_exists(
    case_id: str, update: Update, custom: client.CustomObjectsApi, namespace: str
) -> None:
    """Fixable in git: while the status records no id (nothing exists on the control
    plane for the resource: a create refused, an id to adopt that is not there), the
    same edit the corpus above refuses is accepted, and undone as freely; once the
    operator records the id, the field is fixed (the update carries no status that
    could say otherwise: the apiserver keeps the stored one)."""
    _create(custom, namespace, update.before)
    _record_progress(custom, namespace, update.before)
    corrected = _replace_spec(custom, namespace, update.before, update.after["spec"])
    assert corrected["spec"] == {**corrected["spec"], **update.after["spec"]}, case_id
    _replace_spec(custom, namespace, update.before, update.before["spec"])
    _record_created(custom, namespace, update.before)
    refused = _refusal(
        lambda: _replace_spec(custom, namespace, update.before, update.after["spec"])
    )
    assert "once the" in refused, refused
    plural, name = PLURALS[update.before["kind"]], update.before["metadata"]["name"]
    with_status = custom.get_namespaced_custom_object(GROUP, VERSION, namespace, plural, name)
    with_status["spec"] = update.after["spec"]
    with_status["status"] = {"observedGeneration": 1}  # an update cannot unset the id
    _refusal(
        lambda: custom.replace_namespaced_custom_object(
            GROUP, VERSION, namespace, plural, name, with_status
        )
    )


def _record_progress(api: client.CustomObjectsApi, namespace: str, obj: Obj) -> None:
    """A status the operator writes while nothing exists remotely yet (conditions, no
    id): it does not fix anything."""
    plural = PLURALS[obj["kind"]]
    name = obj["metadata"]["name"]
    current = api.get_namespaced_custom_object(GROUP, VERSION, namespace, plural, name)
    stalled = set_condition([], ConditionType.STALLED, TRUE, Reason.CONFLICT, "taken", 1)
    current["status"] = {"observedGeneration": 1, "conditions": [status_dict_condition(stalled)]}
    api.replace_namespaced_custom_object_status(GROUP, VERSION, namespace, plural, name, current)


def status_dict_condition(condition: Any) -> Obj:
    dumped: Obj = condition.model_dump(mode="json", exclude_none=True)
    return dumped


def test_status_written_by_the_operator_is_kept_whole(
    custom: client.CustomObjectsApi, namespace: str
) -> None:
    """The status schema matches the status models: nothing the operator writes is pruned."""
    created = _create(custom, namespace, DOCKER)
    ready = set_condition([], ConditionType.READY, TRUE, ADReason.DEPLOYED, "Revision DEPLOYED", 1)
    synced = set_condition([], ConditionType.SYNCED, TRUE, Reason.RECONCILE_SUCCESS, "", 1)
    status = status_dict(
        AgentDeploymentStatus(
            observed_generation=1,
            conditions=[ready, synced],
            deployment_id=UUID_A,
            latest_revision_id=UUID_B,
            active_revision_id=UUID_B,
            deployment_status="READY",
            image_version="1.0.0",
            revision=RevisionStatusView(
                id=UUID_B, status="DEPLOYED", image_uri="registry.example.com/acme/x:1"
            ),
            secrets_hash="sha256:abc",
        )
    )
    created["status"] = status
    name = created["metadata"]["name"]
    written = custom.replace_namespaced_custom_object_status(
        GROUP, VERSION, namespace, "agentdeployments", name, created
    )
    assert written["status"] == status

    lst = _create(custom, namespace, LISTENER)
    lst["status"] = status_dict(
        ListenerStatus(observed_generation=1, conditions=[ready], listener_id=UUID_A, version="1")
    )
    written = custom.replace_namespaced_custom_object_status(
        GROUP, VERSION, namespace, "listeners", lst["metadata"]["name"], lst
    )
    assert written["status"] == lst["status"]
