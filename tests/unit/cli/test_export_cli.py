"""`deployplane export` through click's runner, against the fake service of
tests/support/cli_service.py and a fake cluster: what it reads (published listings only,
every page; the cluster's AgentDeployments), what it skips, what it writes where,
one-line errors."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from click.testing import CliRunner, Result
from tests.support import cli_service
from tests.support.cli_service import (
    DEP_ID,
    LIS_ID,
    FakeService,
    assert_one_error_line,
    deployment,
    listener,
)

from deployplane.cli.commands.kube import KubeAccess, KubeError
from deployplane.cli.root import root as app

service = cli_service.service


class FakeCluster:
    """The cluster's AgentDeployments, as `KubeAccess` lists them; every list recorded."""

    namespace = "team-a"

    def __init__(self) -> None:
        self.agentdeployments: list[Mapping[str, Any]] = []
        self.refuse: dict[str | None, KubeError] = {}
        self.lists: list[tuple[str, str | None]] = []
        self.loaded: list[tuple[str | None, str | None]] = []

    def custom_resources(self, plural: str, namespace: str | None) -> list[Mapping[str, Any]]:
        self.lists.append((plural, namespace))
        if namespace in self.refuse:
            raise self.refuse[namespace]
        return self.agentdeployments


@pytest.fixture(autouse=True)
def cluster(monkeypatch: pytest.MonkeyPatch) -> FakeCluster:
    fake = FakeCluster()

    def load(cls: type, kubeconfig: str | None, context: str | None) -> FakeCluster:
        fake.loaded.append((kubeconfig, context))
        return fake

    monkeypatch.setattr(KubeAccess, "load", classmethod(load))
    return fake


def agentdeployment(name: str, **parts: Any) -> dict[str, Any]:
    return {"metadata": {"namespace": "team-a", "name": name, **parts.pop("metadata", {})}, **parts}


SECRET_DEP = {
    "source_config": {"listener_id": LIS_ID},
    "secrets": [{"name": "OPENAI_API_KEY"}],
}


def run(*args: str) -> Result:
    return CliRunner().invoke(app, ["export", *args])


def page(request: httpx.Request, items: list[dict[str, Any]]) -> httpx.Response:
    offset = int(request.url.params.get("offset", 0))
    limit = int(request.url.params["limit"])
    chunk = items[offset : offset + limit]
    return httpx.Response(200, json={"resources": chunk, "offset": offset + len(chunk)})


def serve(service: FakeService, deps: list[dict[str, Any]], lis: list[dict[str, Any]]) -> None:
    service.on("GET", "/v2/deployments", lambda r: page(r, deps))
    service.on("GET", "/v2/listeners", lambda r: page(r, lis))


def test_stdout_is_one_yaml_stream_that_kubectl_apply_reads(service: FakeService) -> None:
    serve(service, [deployment(**SECRET_DEP)], [listener()])
    result = run("--listeners")
    assert result.exit_code == 0, result.output
    docs = list(yaml.safe_load_all(result.stdout))
    assert [(d["kind"], d["metadata"]["name"]) for d in docs] == [
        ("Listener", "cluster-a"),
        ("AgentDeployment", "agent-one"),
    ]
    assert docs[1]["spec"]["sourceConfig"]["listenerRef"] == {"name": "cluster-a"}
    assert docs[1]["spec"]["deploymentId"] == DEP_ID
    assert docs[0]["spec"]["listenerId"] == LIS_ID
    assert {d["spec"]["managementPolicy"] for d in docs} == {"ObserveOnly"}
    assert "exported 1 deployment(s) and 1 listener(s), managementPolicy ObserveOnly" in (
        result.stderr
    )
    assert (
        "kubectl create secret generic agent-one --from-literal=OPENAI_API_KEY=..."
        "   # for agentdeployment/agent-one" in result.stderr
    )
    # reads only
    assert {r.method for r in service.requests} == {"GET"}


def test_manage_and_namespace(service: FakeService) -> None:
    serve(service, [deployment(**SECRET_DEP)], [])
    result = run("--manage", "-n", "team-a")
    assert result.exit_code == 0, result.output
    (doc,) = yaml.safe_load_all(result.stdout)
    assert doc["spec"]["managementPolicy"] == "Full"
    assert doc["metadata"] == {"name": "agent-one", "namespace": "team-a"}
    assert doc["spec"]["sourceConfig"] == {"listenerId": LIS_ID}  # its listener not exported
    assert "kubectl -n team-a create secret generic agent-one" in result.stderr


def test_name_contains_is_the_services_filter_and_every_page_is_read(
    service: FakeService,
) -> None:
    deps = [
        deployment(id=f"{i:08d}-1111-4111-8111-111111111111", name=f"bot-{i:03d}")
        for i in range(130)
    ]
    serve(service, deps, [])
    result = run("--name-contains", "bot")
    assert result.exit_code == 0, result.output
    assert len(list(yaml.safe_load_all(result.stdout))) == 130
    listings = [r.url.params for r in service.requests]
    assert [p.get("name_contains") for p in listings] == ["bot", "bot"]
    assert [p.get("offset") for p in listings] == [None, "100"]
    assert all(r.url.path == "/v2/deployments" for r in service.requests)  # no listeners


def test_listeners_matching_or_used_are_exported(service: FakeService) -> None:
    used = listener()
    matching = listener(id="55555555-5555-4555-8555-555555555555", compute_id="bot-cluster")
    other = listener(id="66666666-6666-4666-8666-666666666666", compute_id="unrelated")
    serve(service, [deployment(name="bot", **SECRET_DEP)], [used, matching, other])
    result = run("--name-contains", "bot", "--listeners")
    assert result.exit_code == 0, result.output
    names = [d["metadata"]["name"] for d in yaml.safe_load_all(result.stdout)]
    assert names == ["bot-cluster", "cluster-a", "bot"]


def test_output_dir_gets_one_file_per_resource_and_says_which(
    service: FakeService, tmp_path: Path
) -> None:
    serve(service, [deployment(**SECRET_DEP)], [listener()])
    out = tmp_path / "new" / "dir"
    result = run("--listeners", "--dir", str(out))
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    files = sorted(p.name for p in out.iterdir())
    assert files == ["agentdeployment-agent-one.yaml", "listener-cluster-a.yaml"]
    for name in files:
        assert f"wrote {out / name}" in result.stderr
    doc = yaml.safe_load((out / "agentdeployment-agent-one.yaml").read_text())
    assert doc["kind"] == "AgentDeployment"


def test_skipped_deployments_are_named_on_stderr(service: FakeService) -> None:
    serve(service, [deployment(source="internal_docker"), deployment(id=LIS_ID, name="b")], [])
    result = run()
    assert result.exit_code == 0, result.output
    assert [d["metadata"]["name"] for d in yaml.safe_load_all(result.stdout)] == ["b"]
    assert f"skipped deployment agent-one ({DEP_ID}): source internal_docker" in result.stderr


def test_nothing_to_export_prints_nothing_on_stdout(service: FakeService) -> None:
    serve(service, [], [])
    result = run()
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert "exported 0 deployment(s) and 0 listener(s)" in result.stderr


def test_an_unwritable_output_dir_is_one_line_exit_2(service: FakeService, tmp_path: Path) -> None:
    serve(service, [deployment()], [])
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = run("-d", str(blocker / "sub"))
    assert result.exit_code == 2
    assert assert_one_error_line(result).startswith(f"error: cannot write to {blocker / 'sub'}")


def test_a_bad_namespace_is_one_line_exit_2_before_any_request(service: FakeService) -> None:
    result = run("-n", "Team_A")
    assert result.exit_code == 2
    assert assert_one_error_line(result) == (
        "error: invalid namespace 'Team_A': not a DNS-1123 label"
    )
    assert service.requests == []


def test_names_that_cannot_be_told_apart_are_one_line_exit_1(service: FakeService) -> None:
    deps = [
        deployment(id="1a2b3c4d-0000-4000-8000-000000000000", name="bot"),
        deployment(id="5e6f7a8b-0000-4000-8000-000000000000", name="Bot"),
        deployment(id="99999999-0000-4000-8000-000000000000", name="bot-1a2b3c4d"),
    ]
    serve(service, deps, [])
    result = run()
    assert result.exit_code == 1
    assert "would both be named 'bot-1a2b3c4d'" in assert_one_error_line(result)
    assert result.stdout == ""


def test_an_api_error_is_one_line_exit_1(service: FakeService) -> None:
    service.on("GET", "/v2/deployments", [httpx.Response(403, json={"detail": "forbidden"})])
    result = run()
    assert result.exit_code == 1
    assert "forbidden" in assert_one_error_line(result)


# ------------------------------------------------- what AgentDeployments manage already


MANAGED_ID = "77777777-7777-4777-8777-777777777777"


@pytest.mark.parametrize(
    "manager",
    [
        agentdeployment("by-status", status={"deploymentId": MANAGED_ID}),
        agentdeployment("by-spec", spec={"deploymentId": MANAGED_ID}),
        agentdeployment(
            "by-marker", metadata={"annotations": {"deployplane.io/external-name": "managed"}}
        ),
    ],
    ids=["status deploymentId", "spec deploymentId", "external-name annotation"],
)
def test_a_deployment_an_agentdeployment_manages_is_skipped_with_one_line(
    service: FakeService, cluster: FakeCluster, manager: dict[str, Any]
) -> None:
    """Applying its export would make an ObserveOnly twin of a managed resource."""
    cluster.agentdeployments = [manager]
    serve(service, [deployment(id=MANAGED_ID, name="managed"), deployment()], [])
    result = run()
    assert result.exit_code == 0, result.output
    assert [d["metadata"]["name"] for d in yaml.safe_load_all(result.stdout)] == ["agent-one"]
    who = f"team-a/{manager['metadata']['name']}"
    skipped = [line for line in result.stderr.splitlines() if line.startswith("skipped")]
    assert skipped == [
        f"skipped deployment managed ({MANAGED_ID}): managed by agentdeployment {who} "
        "already (--include-managed exports it)"
    ]
    assert cluster.lists == [("agentdeployments", None)]  # every namespace


def test_an_agents_deployment_an_agentdeployment_is_creating_is_skipped(
    service: FakeService, cluster: FakeCluster
) -> None:
    """Its create marker holds its agent and environment, not the name the control
    plane gives: the deployment of that agent is its, even before an id is recorded."""
    marker = {"deployplane.io/external-name": "agent bot in staging"}
    cluster.agentdeployments = [agentdeployment("bot-staging", metadata={"annotations": marker})]
    agent = {"agent_id": "bot", "environment": "staging"}
    other = {"agent_id": "bot", "environment": "production"}
    made = [
        deployment(id=MANAGED_ID, name="bot-staging-1a2b3c4d", agent=agent),
        deployment(name="bot-production", agent=other),
    ]
    serve(service, made, [])
    result = run()
    assert result.exit_code == 0, result.output
    assert [d["metadata"]["name"] for d in yaml.safe_load_all(result.stdout)] == ["bot-production"]
    assert "managed by agentdeployment team-a/bot-staging already" in result.stderr


def test_include_managed_exports_them_without_reading_the_cluster(
    service: FakeService, cluster: FakeCluster
) -> None:
    cluster.agentdeployments = [agentdeployment("x", status={"deploymentId": DEP_ID})]
    serve(service, [deployment()], [])
    result = run("--include-managed")
    assert result.exit_code == 0, result.output
    assert [d["metadata"]["name"] for d in yaml.safe_load_all(result.stdout)] == ["agent-one"]
    assert cluster.loaded == []


def test_the_kube_options_choose_the_cluster(service: FakeService, cluster: FakeCluster) -> None:
    serve(service, [deployment()], [])
    result = run("--kubeconfig", "/k/config", "--kube-context", "prod")
    assert result.exit_code == 0, result.output
    assert cluster.loaded == [("/k/config", "prod")]


def test_forbidden_in_every_namespace_reads_the_kube_contexts_own(
    service: FakeService, cluster: FakeCluster
) -> None:
    cluster.refuse[None] = KubeError("list agentdeployments: 403 Forbidden", 403)
    cluster.agentdeployments = [agentdeployment("x", status={"deploymentId": DEP_ID})]
    serve(service, [deployment()], [])
    result = run()
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert cluster.lists == [("agentdeployments", None), ("agentdeployments", "team-a")]


def test_a_cluster_that_cannot_be_read_is_one_line_exit_1(
    service: FakeService, cluster: FakeCluster
) -> None:
    cluster.refuse[None] = KubeError("list agentdeployments in every namespace: Timeout")
    serve(service, [deployment()], [])
    result = run()
    assert result.exit_code == 1
    assert assert_one_error_line(result) == (
        "error: cannot tell which deployments AgentDeployments already manage "
        "(list agentdeployments in every namespace: Timeout): pass --kubeconfig, or "
        "--include-managed to export them all"
    )
    assert result.stdout == ""


# --------------------------------------------------------------------- -o json


def test_json_is_one_list_kubectl_apply_reads(service: FakeService) -> None:
    serve(service, [deployment(**SECRET_DEP)], [listener()])
    result = run("--listeners", "-o", "json")
    assert result.exit_code == 0, result.output
    listing = json.loads(result.stdout)
    assert listing["apiVersion"] == "v1"
    assert listing["kind"] == "List"
    assert [i["kind"] for i in listing["items"]] == ["Listener", "AgentDeployment"]


def test_json_files_in_a_dir(service: FakeService, tmp_path: Path) -> None:
    serve(service, [deployment()], [])
    result = run("-o", "json", "-d", str(tmp_path))
    assert result.exit_code == 0, result.output
    (path,) = tmp_path.iterdir()
    assert path.name == "agentdeployment-agent-one.json"
    assert json.loads(path.read_text())["kind"] == "AgentDeployment"
