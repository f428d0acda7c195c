"""The vendor's own CLI, `langgraph deploy` (PyPI langgraph-cli 0.4.40), against a real
`deployplane controlplane serve` process, on SQLite and on PostgreSQL: the commands a
user of the service runs, as a subprocess with the environment the CLI reads
(LANGGRAPH_HOST_URL, LANGGRAPH_HOST_API_KEY). There is no Docker here, so `--remote`
builds remotely (the CLI's own choice without Docker, forced here with the flag).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml
from tests.support.published import assert_published

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(300)]

KEY = "vendor-key"
KEY_AGENT_MODE_OFF = "vendor-key-agent-mode-off"
LISTENING = "deployplane control plane listening on "
LANGGRAPH = Path(sys.executable).parent / "langgraph"
DIGEST_A = "a" * 64
DIGEST_B = "b" * 64


@pytest.fixture
def emulator(tmp_path: Path, database_url: str) -> Iterator[str]:
    """A served emulator whose builds stay in BUILDING for 4 s: the CLI polls every 3 s
    and shows build logs only while a revision builds."""
    config = {
        "workspaces": [
            {
                "id": "11111111-1111-1111-1111-111111111111",
                "name": "team",
                "api_keys": [KEY],
                "mode": "both",
            },
            {
                "id": "22222222-2222-2222-2222-222222222222",
                "name": "no-agents",
                "api_keys": [KEY_AGENT_MODE_OFF],
                "agent_mode": False,
            },
        ],
        "pipeline": {"step_seconds": 0.5, "build_seconds": 4.0},
    }
    (tmp_path / "emulator.yaml").write_text(yaml.safe_dump(config))
    env = {k: v for k, v in os.environ.items() if k != "DEPLOYPLANE_DATABASE_URL"}
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "deployplane.cli", "controlplane", "serve", "--port", "0"),
            *("--config", str(tmp_path / "emulator.yaml"), "--database", database_url),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith(LISTENING):
                yield line.strip().removeprefix(LISTENING)
                break
        else:
            raise AssertionError("the emulator exited without listening")
    finally:
        process.terminate()
        process.wait(timeout=20)


def project(path: Path, graph_file: str = "agent.py") -> Path:
    path.mkdir(parents=True, exist_ok=True)
    config = {"graphs": {"agent": f"./{graph_file}:graph"}, "dependencies": ["."]}
    (path / "langgraph.json").write_text(json.dumps(config))
    (path / "agent.py").write_text("graph = None\n")
    return path


def langgraph(
    url: str, cwd: Path, *args: str, path: str | None = None, key: str = KEY
) -> subprocess.CompletedProcess[str]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("LANGSMITH", "LANGCHAIN"))},
        "LANGGRAPH_HOST_URL": url,
        "LANGGRAPH_HOST_API_KEY": key,
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        **({"PATH": path} if path is not None else {}),
    }
    return subprocess.run(
        [str(LANGGRAPH), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=240
    )


def api(url: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"X-Api-Key": KEY})


def deployment_id(output: str) -> str:
    found = re.search(r"Deployment ID: ([0-9a-f-]{36})", output)
    assert found, output
    return found.group(1)


def test_remote_build_deploys_and_shows_its_build_and_deploy_logs(
    emulator: str, tmp_path: Path
) -> None:
    app = project(tmp_path / "app")
    done = langgraph(
        emulator,
        app,
        *("deploy", "--remote", "--verbose", "--no-input", "--name", "app"),
        *("--deployment-type", "dedicated"),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    dep = deployment_id(done.stdout)
    # the build's own lines, streamed by --verbose while the revision was BUILDING
    assert "| Graph 'agent': ./agent.py" in done.stdout
    assert "| Build checks passed" in done.stdout
    assert "Deployment successful!" in done.stdout
    assert f"URL: https://{dep}.deployments.deployplane.example" in done.stdout
    with api(emulator) as client:
        deployment = client.get(f"/v2/deployments/{dep}").json()
        assert_published("Deployment", deployment)
        assert deployment["source"] == "internal_source"
        assert deployment["source_config"]["deployment_type"] == "prod"  # dedicated
        image = deployment["source_revision_config"]["image_uri"]
        assert re.fullmatch(r"images\.deployplane\.example/app@sha256:[0-9a-f]{64}", image)
        assert deployment["image_version"] == image

    listed = langgraph(emulator, app, "deploy", "list", "--json")
    assert json.loads(listed.stdout) == [{"id": dep, "name": "app"}]
    build = langgraph(emulator, app, "deploy", "logs", "--name", "app", "--type", "build")
    assert build.returncode == 0, build.stderr
    assert "[INFO] Build checks passed" in build.stdout
    assert "[INFO] Build succeeded: images.deployplane.example/app@sha256:" in build.stdout
    logs = langgraph(emulator, app, "deploy", "logs", "--deployment-id", dep)
    assert f"Revision deployed; serving at https://{dep}." in logs.stdout
    errors = langgraph(emulator, app, "deploy", "logs", "--name", "app", "--level", "ERROR")
    assert "No log entries found." in errors.stdout

    # again, with a changed project: a new revision, the first one replaced. Without
    # --remote: with no `docker` on the PATH the CLI itself chooses the remote build.
    (app / "agent.py").write_text("graph = 'v2'\n")
    (tmp_path / "no-docker").mkdir()
    again = langgraph(
        emulator, app, "deploy", "--no-input", "--name", "app", path=str(tmp_path / "no-docker")
    )
    assert again.returncode == 0, again.stdout + again.stderr
    assert "Using remote build instead." in again.stdout
    revisions = langgraph(emulator, app, "deploy", "revisions", "list", dep)
    assert revisions.stdout.count("DEPLOYED") == 1
    assert revisions.stdout.count("REPLACED") == 1

    deleted = langgraph(emulator, app, "deploy", "delete", dep, "--force")
    assert deleted.returncode == 0
    assert f"Deleted deployment {dep}." in deleted.stdout


def test_a_broken_project_fails_the_build_with_the_reason_in_its_log(
    emulator: str, tmp_path: Path
) -> None:
    broken = project(tmp_path / "broken", graph_file="missing.py")
    failed = langgraph(emulator, broken, "deploy", "--remote", "--no-input", "--name", "broken")
    assert failed.returncode == 1
    assert "Deployment failed" in failed.stdout
    reason = "graph 'agent': file ./missing.py not found in the source archive"
    # without --verbose the CLI prints the build log's last lines on BUILD_FAILED
    assert f"| Build failed: {reason}" in failed.stdout
    dep = deployment_id(failed.stdout)
    with api(emulator) as client:
        revisions = client.get(f"/v2/deployments/{dep}/revisions").json()["resources"]
        assert [r["status"] for r in revisions] == ["BUILD_FAILED"]
        assert_published("Revision", revisions[0])
    logs = langgraph(emulator, broken, "deploy", "logs", "--name", "broken", "--type", "build")
    assert f"[ERROR] Build failed: {reason}" in logs.stdout


def test_image_uri_through_a_listener_created_then_updated(emulator: str, tmp_path: Path) -> None:
    app = project(tmp_path / "img")
    with api(emulator) as client:
        listener = client.post(
            "/v2/listeners",
            json={
                "compute_type": "k8s",
                "compute_id": "cluster-1",
                "compute_config": {"k8s_namespaces": ["agents", "other"]},
            },
        ).json()
    listeners = langgraph(emulator, app, "deploy", "listeners", "list")
    assert listener["id"] in listeners.stdout
    assert "agents, other" in listeners.stdout
    image_a = f"registry.example.com/agents/img@sha256:{DIGEST_A}"
    created = langgraph(
        emulator,
        app,
        *("deploy", "--no-input", "--name", "img", "--image-uri", image_a),
        *("--listener-id", listener["id"], "--k8s-namespace", "agents"),
    )
    assert created.returncode == 0, created.stdout + created.stderr
    assert f"Deploying through listener {listener['id']} in namespace agents" in created.stdout
    assert "Deployment successful!" in created.stdout
    dep = deployment_id(created.stdout)
    image_b = f"registry.example.com/agents/img@sha256:{DIGEST_B}"
    updated = langgraph(
        emulator, app, "deploy", "--no-input", "--name", "img", "--image-uri", image_b
    )
    assert updated.returncode == 0, updated.stdout + updated.stderr
    assert f"Found existing deployment (ID: {dep})" in updated.stdout
    with api(emulator) as client:
        deployment = client.get(f"/v2/deployments/{dep}").json()
        assert_published("Deployment", deployment)
        assert deployment["source_config"]["listener_id"] == listener["id"]
        assert deployment["source_config"]["listener_config"] == {"k8s_namespace": "agents"}
        assert deployment["image_version"] == image_b
    revisions = langgraph(emulator, app, "deploy", "revisions", "list", dep)
    assert revisions.stdout.count("DEPLOYED") == 1
    assert revisions.stdout.count("REPLACED") == 1
    deploy_logs = langgraph(emulator, app, "deploy", "logs", "--name", "img")
    assert f"Deploying {image_b}" in deploy_logs.stdout
    assert f"Deploying {image_a}" in deploy_logs.stdout
    listed = langgraph(emulator, app, "deploy", "list", "--json")
    assert json.loads(listed.stdout) == [{"id": dep, "name": "img"}]
    deleted = langgraph(emulator, app, "deploy", "delete", "--force", dep)
    assert deleted.returncode == 0


def deployplane(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("DEPLOYPLANE_")},
        "DEPLOYPLANE_CONTROL_PLANE_URL": url,
        "DEPLOYPLANE_API_KEY": KEY,
    }
    return subprocess.run(
        [sys.executable, "-m", "deployplane.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_deployplane_logs_follows_a_remote_build_until_it_is_done(
    emulator: str, tmp_path: Path
) -> None:
    """`deployplane deployments logs NAME --type build -f` on a build started by the
    vendor's CLI (--no-wait): every build line once, in order, then it ends by itself
    when the revision is done, as `kubectl logs -f` does with its container."""
    app = project(tmp_path / "followed")
    started = langgraph(
        emulator, app, "deploy", "--remote", "--no-wait", "--no-input", "--name", "followed"
    )
    assert started.returncode == 0, started.stdout + started.stderr
    followed = deployplane(
        emulator,
        "deployments",
        "logs",
        "followed",
        "--type",
        "build",
        "-f",
        "--poll-interval",
        "0.5",
    )
    assert followed.returncode == 0, followed.stderr
    messages = [line.split(maxsplit=2)[2] for line in followed.stdout.splitlines()]
    assert messages[0] == "Build queued"
    assert "Build checks passed" in messages
    assert messages[-1].startswith("Build succeeded: images.deployplane.example/followed@sha256:")
    assert len(messages) == len(set(messages))  # no line twice
    deploy = deployplane(
        emulator, "deployments", "logs", "followed", "-f", "--poll-interval", "0.5"
    )
    assert deploy.stdout.splitlines()[-1].split(maxsplit=2)[2].startswith("Revision deployed")
    later = deployplane(
        emulator, "deployments", "logs", "followed", "--since", "2999-01-01T00:00:00Z"
    )
    assert later.stdout == ""
    unknown = deployplane(emulator, "deployments", "logs", "nowhere")
    assert unknown.returncode != 0
    assert unknown.stderr.strip().count("\n") == 0  # one line, no traceback
    assert "not found" in unknown.stderr


# ------------------------------------------------------------------ agent mode
# `langgraph deploy --agent-id A --agent-environment E`: a deployment keyed by an agent
# and an environment, which the control plane names (docs/emulator.md, "Agent mode").


def agent_deploy(
    url: str, cwd: Path, agent_id: str, environment: str, *args: str
) -> subprocess.CompletedProcess[str]:
    return langgraph(
        url,
        cwd,
        *("deploy", "--no-input", "--agent-id", agent_id, "--agent-environment", environment),
        *args,
    )


def listed_json(url: str, cwd: Path, *args: str) -> list[dict[str, str]]:
    done = langgraph(url, cwd, "deploy", "list", "--json", *args)
    assert done.returncode == 0, done.stdout + done.stderr
    listed: list[dict[str, str]] = json.loads(done.stdout)
    return listed


def test_agent_mode_creates_updates_in_place_and_keeps_environments_apart(
    emulator: str, tmp_path: Path
) -> None:
    app = project(tmp_path / "bot")
    # Other deployments present, by name and of another agent: the CLI must tell which
    # one is this agent's in each environment through the filters alone.
    image_a = f"registry.example.com/agents/bot@sha256:{DIGEST_A}"
    image_b = f"registry.example.com/agents/bot@sha256:{DIGEST_B}"
    other = langgraph(
        emulator, app, "deploy", "--no-input", "--name", "other", "--image-uri", image_a
    )
    assert other.returncode == 0, other.stdout + other.stderr
    rival = agent_deploy(emulator, app, "rival", "development", "--image-uri", image_a)
    assert rival.returncode == 0, rival.stdout + rival.stderr

    # created by the remote build, in development
    created = agent_deploy(emulator, app, "support-bot", "development", "--remote")
    assert created.returncode == 0, created.stdout + created.stderr
    assert "Looking up agent 'support-bot' in development" in created.stdout
    assert "Creating deployment for agent 'support-bot' in development" in created.stdout
    assert "Deployment name: support-bot-development" in created.stdout
    assert "Deployment successful!" in created.stdout
    development = deployment_id(created.stdout)

    # again: the same deployment, a new revision (the first one replaced)
    (app / "agent.py").write_text("graph = 'v2'\n")
    updated = agent_deploy(emulator, app, "support-bot", "development", "--remote")
    assert updated.returncode == 0, updated.stdout + updated.stderr
    assert f"Found existing deployment (ID: {development})" in updated.stdout
    assert "Creating deployment" not in updated.stdout
    revisions = langgraph(emulator, app, "deploy", "revisions", "list", development)
    assert revisions.stdout.count("DEPLOYED") == 1
    assert revisions.stdout.count("REPLACED") == 1

    # production: a deployment of its own, created then updated from an image
    in_production = agent_deploy(emulator, app, "support-bot", "production", "--image-uri", image_a)
    assert in_production.returncode == 0, in_production.stdout + in_production.stderr
    assert "Deployment name: support-bot-production" in in_production.stdout
    production = deployment_id(in_production.stdout)
    assert production != development
    promoted = agent_deploy(emulator, app, "support-bot", "production", "--image-uri", image_b)
    assert promoted.returncode == 0, promoted.stdout + promoted.stderr
    assert f"Found existing deployment (ID: {production})" in promoted.stdout
    with api(emulator) as client:
        got = client.get(f"/v2/deployments/{production}").json()
        assert_published("Deployment", got)
        assert got["agent"] == {"agent_id": "support-bot", "environment": "production"}
        assert got["image_version"] == image_b
        untouched = client.get(f"/v2/deployments/{development}").json()
        assert untouched["agent"] == {"agent_id": "support-bot", "environment": "development"}
        assert untouched["source"] == "internal_source"
        runs = client.get(f"/v2/deployments/{production}/revisions").json()["resources"]
        assert len(runs) == 2

    # the list's two filters, alone and together
    assert listed_json(emulator, app, "--agent-id", "support-bot") == [
        {"id": development, "name": "support-bot-development"},
        {"id": production, "name": "support-bot-production"},
    ]
    development_names = [
        d["name"] for d in listed_json(emulator, app, "--agent-environment", "development")
    ]
    assert development_names == ["rival-development", "support-bot-development"]
    both = listed_json(
        emulator, app, "--agent-id", "support-bot", "--agent-environment", "production"
    )
    assert both == [{"id": production, "name": "support-bot-production"}]
    everything = [d["name"] for d in listed_json(emulator, app)]
    assert everything == [
        "other",
        "rival-development",
        "support-bot-development",
        "support-bot-production",
    ]


def test_agent_mode_a_second_deployment_of_an_agent_is_the_clis_409(
    emulator: str, tmp_path: Path
) -> None:
    """The CLI looks the agent up before it creates, so only a create racing another
    meets the 409; its own create step (`_create_deployment`, run in this process) turns
    the control plane's 409 into its sentence."""
    from langgraph_cli.deploy import _create_deployment
    from langgraph_cli.host_backend import HostBackendClient, HostBackendError

    app = project(tmp_path / "raced")
    image = f"registry.example.com/agents/raced@sha256:{DIGEST_A}"
    first = agent_deploy(emulator, app, "raced", "staging", "--image-uri", image)
    assert first.returncode == 0, first.stdout + first.stderr
    client = HostBackendClient(emulator, KEY)
    with pytest.raises(HostBackendError) as refused:
        _create_deployment(
            client,
            1,
            name=None,
            source="external_docker",
            source_config={},
            source_revision_config={"image_uri": image},
            secrets=[],
            agent={"agent_id": "raced", "environment": "staging"},
        )
    assert refused.value.status_code == 409
    assert refused.value.message == "This agent already has a deployment in this environment."
    assert [d["name"] for d in listed_json(emulator, app, "--agent-id", "raced")] == [
        "raced-staging"
    ]


def test_agent_mode_off_in_a_workspace_is_one_clear_line_from_the_cli(
    emulator: str, tmp_path: Path
) -> None:
    app = project(tmp_path / "plain")
    image = f"registry.example.com/agents/plain@sha256:{DIGEST_A}"
    for args in (
        ("deploy", "list", "--agent-id", "plain"),
        (
            *("deploy", "--no-input", "--agent-id", "plain", "--agent-environment", "staging"),
            *("--image-uri", image),
        ),
    ):
        refused = langgraph(emulator, app, *args, key=KEY_AGENT_MODE_OFF)
        assert refused.returncode != 0, args
        assert "failed with status 403: Agent mode is off for this workspace" in (refused.stderr), (
            refused.stdout + refused.stderr
        )
    named = langgraph(
        emulator,
        app,
        *("deploy", "--no-input", "--name", "plain", "--image-uri", image),
        key=KEY_AGENT_MODE_OFF,
    )
    assert named.returncode == 0, named.stdout + named.stderr
