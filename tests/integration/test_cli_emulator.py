"""The CLI against the real emulator process: `get -o yaml | update -f -` and a repeated
`apply -f` change nothing, proven by the emulator's own request counts
(`/_emulator/stats`) and revision lists; image references it refuses (422)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from click.testing import CliRunner, Result
from tests.support.emulator_serve import serve

from deployplane.cli.root import root as app
from deployplane.emulator.settings import DEV_INTEGRATION_ID
from deployplane.emulator.store.answers import SECRET_VALUE_MASK

KEY = "cli-roundtrip-key"
ADMIN = {"X-Admin-Key": "cli-roundtrip-admin"}
REPO_URL = "https://git.example.com/dev/agent"  # the dev workspace's repository


class Emulator:
    def __init__(self, url: str, tmp_path: Path) -> None:
        self.url = url
        self.tmp_path = tmp_path

    def cli(self, *args: str, stdin: str | None = None) -> Result:
        env = {"DEPLOYPLANE_CONTROL_PLANE_URL": self.url, "DEPLOYPLANE_API_KEY": KEY}
        env["XDG_CONFIG_HOME"] = str(self.tmp_path)
        return CliRunner().invoke(app, list(args), input=stdin, env=env)

    def ok(self, *args: str, stdin: str | None = None) -> Result:
        result = self.cli(*args, stdin=stdin)
        assert result.exit_code == 0, result.output
        return result

    def reset_counts(self) -> None:
        assert httpx.delete(f"{self.url}/_emulator/stats", headers=ADMIN).status_code == 204

    def writes(self) -> dict[str, Any]:
        """The requests counted since the reset that are not reads."""
        counted = httpx.get(f"{self.url}/_emulator/stats", headers=ADMIN).json()["requests"]
        return {route: n for route, n in counted.items() if not route.startswith("GET ")}

    def reads(self) -> int:
        counted = httpx.get(f"{self.url}/_emulator/stats", headers=ADMIN).json()["requests"]
        return sum(sum(n.values()) for route, n in counted.items() if route.startswith("GET "))

    def revisions(self, name: str) -> list[str]:
        listed = json.loads(self.ok("revisions", "list", name, "-o", "json").stdout)
        return [r["id"] for r in listed]


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[Emulator]:
    args = ["--api-key", KEY, "--admin-key", ADMIN["X-Admin-Key"]]
    with serve(*args, cwd=tmp_path) as (_, url):
        yield Emulator(url, tmp_path)


def listener_id(emulator: Emulator) -> str:
    body = "compute_type: k8s\ncompute_id: cluster-a\ncompute_config: {k8s_namespaces: [agents]}\n"
    emulator.ok("listeners", "create", "-f", "-", stdin=body)
    return str(json.loads(emulator.ok("listeners", "get", "cluster-a", "-o", "json").stdout)["id"])


def image_file(listener: str) -> dict[str, Any]:
    return {
        "name": "img-bot",
        "source": "external_docker",
        "source_config": {
            "listener_id": listener,
            "listener_config": {"k8s_namespace": "agents"},
            "resource_spec": {"min_scale": 1, "max_scale": 2},
            "custom_url": "https://img-bot.example",
        },
        "source_revision_config": {"image_uri": "registry.example.com/img-bot:1"},
        "secrets": [{"name": "OPENAI_API_KEY", "value": "sk-one"}],
    }


def git_file() -> dict[str, Any]:
    return {
        "name": "git-bot",
        "source": "git_host",
        "source_config": {
            "integration_id": str(DEV_INTEGRATION_ID),
            "repo_url": REPO_URL,
            "deployment_type": "dev",
        },
        "source_revision_config": {"repo_ref": "main", "graph_config_path": "langgraph.json"},
        "secrets": [{"name": "TOKEN", "value": "t-one"}],
    }


@pytest.mark.parametrize("kind", ["external_docker", "git_host"])
def test_get_yaml_into_update_is_a_round_trip_without_a_request(
    emulator: Emulator, kind: str
) -> None:
    body = image_file(listener_id(emulator)) if kind == "external_docker" else git_file()
    name = body["name"]
    emulator.ok("deployments", "create", "-f", "-", stdin=json.dumps(body))
    before = emulator.revisions(name)
    exported = emulator.ok("deployments", "get", name, "-o", "yaml").stdout
    assert yaml.safe_load(exported)["secrets"] == [{"name": body["secrets"][0]["name"]}]
    assert SECRET_VALUE_MASK not in exported  # the answer's mask is not printed as a value
    emulator.reset_counts()
    result = emulator.ok("deployments", "update", name, "-f", "-", stdin=exported)
    assert f"deployment/{name} unchanged" in result.stderr
    assert emulator.writes() == {}  # no PATCH: nothing differed
    assert emulator.revisions(name) == before
    # An edit of the exported file sends only the edited field.
    edited = yaml.safe_load(exported)
    edited["source_config"]["resource_spec"] = {"min_scale": 1, "max_scale": 5}
    emulator.reset_counts()
    emulator.ok("deployments", "update", name, "-f", "-", stdin=yaml.safe_dump(edited))
    assert emulator.writes() == {"PATCH /v2/deployments/{deployment_id}": {"200": 1}}
    assert emulator.revisions(name) == before  # a source_config change makes no revision


def test_apply_creates_then_changes_nothing_on_a_second_run(emulator: Emulator) -> None:
    listener = listener_id(emulator)
    file = emulator.tmp_path / "app.yaml"
    documents = [image_file(listener), git_file()]
    file.write_text(yaml.safe_dump_all(documents))
    created = emulator.ok("apply", "-f", str(file))
    assert created.stdout == "deployment/img-bot created\ndeployment/git-bot created\n"
    revisions = {name: emulator.revisions(name) for name in ("img-bot", "git-bot")}

    # The exported state, applied again (as a GitOps loop would): no write at all.
    exported = [
        yaml.safe_load(emulator.ok("deployments", "get", name, "-o", "yaml").stdout)
        for name in ("img-bot", "git-bot")
    ]
    file.write_text(yaml.safe_dump_all(exported))
    emulator.reset_counts()
    again = emulator.ok("apply", "-f", str(file))
    assert again.stdout == "deployment/img-bot unchanged\ndeployment/git-bot unchanged\n"
    assert emulator.writes() == {}
    assert emulator.reads() > 0  # it did look
    assert {n: emulator.revisions(n) for n in revisions} == revisions

    # A new image: one PATCH, one new revision; applied twice, the second sends nothing.
    exported[0]["source_revision_config"]["image_uri"] = "registry.example.com/img-bot:2"
    file.write_text(yaml.safe_dump_all(exported))
    emulator.reset_counts()
    assert "deployment/img-bot configured" in emulator.ok("apply", "-f", str(file)).stdout
    assert emulator.writes() == {"PATCH /v2/deployments/{deployment_id}": {"200": 1}}
    assert len(emulator.revisions("img-bot")) == len(revisions["img-bot"]) + 1
    emulator.reset_counts()
    assert "deployment/img-bot unchanged" in emulator.ok("apply", "-f", str(file)).stdout
    assert emulator.writes() == {}


def test_apply_of_secret_values_sends_them_but_makes_no_revision(emulator: Emulator) -> None:
    """Secret values are write-only: apply cannot compare them, so it sends them; the
    service makes no revision when they are unchanged."""
    body = yaml.safe_dump(image_file(listener_id(emulator)))
    emulator.ok("apply", "-f", "-", stdin=body)
    before = emulator.revisions("img-bot")
    emulator.reset_counts()
    emulator.ok("apply", "-f", "-", stdin=body)
    assert emulator.writes() == {"PATCH /v2/deployments/{deployment_id}": {"200": 1}}
    assert emulator.revisions("img-bot") == before


def test_apply_of_a_listener_by_compute_id(emulator: Emulator) -> None:
    body = "compute_type: k8s\ncompute_id: cluster-b\nversion: '1'\n"
    assert emulator.ok("apply", "-f", "-", stdin=body).stdout == "listener/cluster-b created\n"
    emulator.reset_counts()
    assert emulator.ok("apply", "-f", "-", stdin=body).stdout == "listener/cluster-b unchanged\n"
    assert emulator.writes() == {}
    changed = body.replace("'1'", "'2'")
    assert emulator.ok("apply", "-f", "-", stdin=changed).stdout == (
        "listener/cluster-b configured\n"
    )


@pytest.mark.parametrize(
    "image", ["NOT A VALID IMAGE::!!", "Registry.io/Org/App:1", "app:tag:extra", "app@sha256:12"]
)
def test_the_emulator_refuses_an_image_no_registry_would_pull(
    emulator: Emulator, image: str
) -> None:
    body = {
        "name": "bad-image",
        "source": "external_docker",
        "source_revision_config": {"image_uri": image},
    }
    answer = httpx.post(f"{emulator.url}/v2/deployments", json=body, headers={"X-Api-Key": KEY})
    assert answer.status_code == 422, answer.text
    (entry,) = answer.json()["detail"]
    assert entry["loc"] == ["body", "source_revision_config", "image_uri"]
    assert entry["msg"].startswith("not a valid image reference: ")
    listed = httpx.get(f"{emulator.url}/v2/deployments", headers={"X-Api-Key": KEY}).json()
    assert listed["resources"] == []


def agent_file(image: str = "registry.example.com/bot:1") -> dict[str, Any]:
    """A deployment file naming no deployment: `create --agent-id` gives it its agent."""
    return {"source": "external_docker", "source_revision_config": {"image_uri": image}}


def test_create_for_an_agent_and_list_by_agent_and_environment(emulator: Emulator) -> None:
    for environment in ("staging", "production"):
        created = emulator.ok(
            *("deployments", "create", "-f", "-", "-o", "name"),
            *("--agent-id", "bot", "--agent-environment", environment),
            stdin=json.dumps(agent_file()),
        )
        assert created.stdout == f"deployment/bot-{environment}\n"
    emulator.ok("deployments", "create", "-f", "-", stdin=json.dumps({**agent_file(), "name": "n"}))

    def names(*flags: str) -> list[str]:
        listed = emulator.ok("deployments", "list", "-o", "json", *flags).stdout
        return [d["name"] for d in json.loads(listed)]

    assert names("--agent-id", "bot") == ["bot-staging", "bot-production"]
    assert names("--agent-environment", "production") == ["bot-production"]
    assert names("--agent-id", "bot", "--agent-environment", "STAGING") == ["bot-staging"]
    wide = emulator.ok("deployments", "list", "-o", "wide", "--agent-id", "bot").stdout
    header, staging, _ = wide.splitlines()
    assert header.split()[-2:] == ["AGENT", "ENVIRONMENT"]
    assert staging.split()[-2:] == ["bot", "staging"]

    # a second deployment of the agent in an environment: the service's 409, one line
    again = emulator.cli(
        *("deployments", "create", "-f", "-"),
        *("--agent-id", "bot", "--agent-environment", "staging"),
        stdin=json.dumps(agent_file()),
    )
    assert again.exit_code != 0
    assert "This agent already has a deployment in this environment" in again.stderr
    assert again.stderr.strip().count("\n") == 0
    # what the flags cannot mean, before any request
    for flags, said in (
        (("--agent-id", "bot"), "--agent-id and --agent-environment are required together"),
        (("--agent-environment", "staging"), "are required together"),
    ):
        refused = emulator.cli("deployments", "create", "-f", "-", *flags, stdin="{}")
        assert (refused.exit_code, said in refused.stderr) == (2, True), refused.stderr
    named = emulator.cli(
        *("deployments", "create", "-f", "-", "--agent-id", "bot"),
        *("--agent-environment", "development"),
        stdin=json.dumps({**agent_file(), "name": "mine"}),
    )
    assert named.exit_code == 2
    assert "name: not with --agent-id" in named.stderr
    assert names("--agent-id", "bot") == ["bot-staging", "bot-production"]


def test_an_agents_deployment_round_trips_and_applies_by_its_agent(emulator: Emulator) -> None:
    emulator.ok(
        *("deployments", "create", "-f", "-", "--agent-id", "bot"),
        *("--agent-environment", "development"),
        stdin=json.dumps(agent_file()),
    )
    exported = emulator.ok("deployments", "get", "bot-development", "-o", "yaml").stdout
    shown = yaml.safe_load(exported)
    assert shown["agent"] == {"agent_id": "bot", "environment": "development"}
    assert shown["is_preview"] is False
    emulator.reset_counts()
    emulator.ok("deployments", "update", "bot-development", "-f", "-", stdin=exported)
    assert emulator.writes() == {}  # name and agent as they are: nothing sent

    # apply finds a file's deployment by its agent: a new image is one PATCH of it
    file = {**agent_file("registry.example.com/bot:2"), **{"agent": shown["agent"]}}
    emulator.reset_counts()
    applied = emulator.ok("apply", "-f", "-", stdin=yaml.safe_dump(file))
    assert applied.stdout == "deployment/bot-development configured\n"
    assert emulator.writes() == {"PATCH /v2/deployments/{deployment_id}": {"200": 1}}
    # in another environment, apply creates it
    elsewhere = {**file, "agent": {"agent_id": "bot", "environment": "production"}}
    created = emulator.ok("apply", "-f", "-", stdin=yaml.safe_dump(elsewhere))
    assert created.stdout == "deployment/bot-production created\n"
    moved = {**shown, "agent": {"agent_id": "bot", "environment": "staging"}}
    refused = emulator.cli(
        "deployments", "update", "bot-development", "-f", "-", stdin=yaml.safe_dump(moved)
    )
    assert refused.exit_code == 2
    assert "agent: cannot change (the deployment's is 'bot' in development)" in refused.stderr
