"""`deployplane deployments port-forward`: where the deployment runs, the Service it
forwards to, the kubectl it runs (a stand-in script here; the real forward is in
tests/e2e/test_realnode_server.py), and one-line errors."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from tests.support import cli_service
from tests.support.cli_service import (
    DEP_ID,
    LIS_ID,
    FakeService,
    assert_one_error_line,
    deployment,
    listener,
    run,
)

from deployplane.cli.commands.portforward import (
    ForwardError,
    Target,
    find_kubectl,
    forward_argv,
    kubeconfig_of,
    kubectl_error,
    listening_port,
    pick_service,
    service_query,
)

service = cli_service.service


@pytest.fixture(autouse=True)
def home_kubeconfig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A kubeconfig where kubectl looks by default (~/.kube/config), none in $KUBECONFIG."""
    home = tmp_path / "home"
    (home / ".kube").mkdir(parents=True)
    (home / ".kube" / "config").write_text("apiVersion: v1\nkind: Config\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    return home / ".kube" / "config"


SERVICE = {"items": [{"metadata": {"namespace": "team-a", "name": "agent-one-11111111"}}]}


def fake_kubectl(tmp_path: Path, *, services: object, forward: str) -> Path:
    """A kubectl that answers `get services` with `services` and runs `forward` (shell)
    for port-forward; every argv goes to calls.log."""
    script = tmp_path / "kubectl"
    listing = tmp_path / "services.json"
    listing.write_text(json.dumps(services))
    script.write_text(
        "#!/bin/sh\n"
        f'echo "$@" >> {tmp_path}/calls.log\n'
        'case "$*" in\n'
        f'  *"get services"*) cat {listing} ;;\n'
        f"  *port-forward*) {forward} ;;\n"
        "esac\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return tmp_path


def forwarding_then_lost(tmp_path: Path, port: int) -> Path:
    """A kubectl that forwards from `port`, then loses the pod."""
    return fake_kubectl(
        tmp_path,
        services=SERVICE,
        forward=f"echo 'Forwarding from 127.0.0.1:{port} -> 8000'; "
        "echo 'error: lost connection to pod' >&2; exit 1",
    )


def calls(tmp_path: Path) -> list[str]:
    return (tmp_path / "calls.log").read_text().splitlines()


def on_listener(service: FakeService, **config: object) -> None:
    source_config = {"listener_id": LIS_ID, **config}
    service.on(
        "GET",
        f"/v2/deployments/{DEP_ID}",
        [httpx.Response(200, json=deployment(source_config=source_config))],
    )
    service.on("GET", f"/v2/listeners/{LIS_ID}", [httpx.Response(200, json=listener())])


def test_the_forward_runs_kubectl_on_the_listeners_namespace_and_127_0_0_1(
    service: FakeService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    on_listener(service)
    monkeypatch.setenv("DEPLOYPLANE_TOOLS_BIN", str(forwarding_then_lost(tmp_path, 18000)))
    kubeconfig = tmp_path / "k" / "config"
    kubeconfig.parent.mkdir()
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    result = run("deployments", "port-forward", DEP_ID, "18000", "--kubeconfig", str(kubeconfig))
    assert result.exit_code == 1
    assert result.stdout.strip() == (
        "forwarding http://127.0.0.1:18000 -> deployment agent-one "
        "(team-a/service/agent-one-11111111:8000); Ctrl-C to stop"
    )
    line = assert_one_error_line(result)
    assert line == "error: port-forward: lost connection to pod (the forward stopped)"
    get, forward = calls(tmp_path)
    assert get == (
        f"--kubeconfig {kubeconfig} get services -n team-a -l "
        f"deployplane.io/deployment-id={DEP_ID},app.kubernetes.io/component=agent-server -o json"
    )
    assert forward == (
        f"--kubeconfig {kubeconfig} port-forward -n team-a service/agent-one-11111111 "
        "18000:8000 --address 127.0.0.1"
    )


def test_a_kubectl_that_cannot_bind_is_one_line(
    service: FakeService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    on_listener(service, listener_config={"k8s_namespace": "team-b"})
    bin_dir = fake_kubectl(
        tmp_path,
        services=SERVICE,
        forward="echo 'Unable to listen on port 18000: address already in use' >&2; "
        "echo 'error: unable to listen on any of the requested ports' >&2; exit 1",
    )
    monkeypatch.setenv("DEPLOYPLANE_TOOLS_BIN", str(bin_dir))
    result = run("deployments", "port-forward", DEP_ID, "18000")
    assert result.exit_code == 1
    assert result.stdout == ""
    line = assert_one_error_line(result)
    assert line == "error: port-forward: unable to listen on any of the requested ports"
    assert " -n team-b " in calls(tmp_path)[0]  # listener_config's namespace wins


def test_no_service_names_the_deployment_and_the_namespace(
    service: FakeService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    on_listener(service)
    bin_dir = fake_kubectl(tmp_path, services={"items": []}, forward="exit 0")
    monkeypatch.setenv("DEPLOYPLANE_TOOLS_BIN", str(bin_dir))
    result = run("deployments", "port-forward", DEP_ID, "18000", "-n", "other")
    assert result.exit_code == 1
    assert "deployment agent-one has no agent-server Service in namespace other" in (
        assert_one_error_line(result)
    )


@pytest.mark.parametrize("port", ["-1", "65536", "http"])
def test_a_bad_local_port_is_a_usage_error(service: FakeService, port: str) -> None:
    result = run("deployments", "port-forward", DEP_ID, port)
    assert result.exit_code == 2
    assert "LOCAL_PORT" in result.output
    assert service.requests == []


def test_an_unknown_deployment_is_one_line(service: FakeService) -> None:
    service.on("GET", "/v2/deployments", [httpx.Response(200, json={"resources": [], "offset": 0})])
    result = run("deployments", "port-forward", "nope", "18000")
    assert result.exit_code == 1
    assert "deployment 'nope' not found" in assert_one_error_line(result)


def test_without_a_kubeconfig_it_says_what_is_missing_before_any_request(
    service: FakeService, home_kubeconfig: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kubectl would fall back to localhost:8080 and say only that the connection was
    refused: the command says what to give, and neither asks the control plane nor
    runs kubectl."""
    home_kubeconfig.unlink()
    bin_dir = fake_kubectl(tmp_path, services=SERVICE, forward="exit 0")
    monkeypatch.setenv("DEPLOYPLANE_TOOLS_BIN", str(bin_dir))
    result = run("deployments", "port-forward", DEP_ID, "18000")
    assert result.exit_code == 2
    line = assert_one_error_line(result)
    assert line == "error: port-forward: no kubeconfig: set KUBECONFIG or pass --kubeconfig"
    assert service.requests == []
    assert not (tmp_path / "calls.log").exists()


def test_a_kubeconfig_that_is_not_there_is_named(
    service: FakeService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "nope"))
    result = run("deployments", "port-forward", DEP_ID, "18000")
    assert result.exit_code == 2
    assert assert_one_error_line(result) == (
        f"error: port-forward: kubeconfig {tmp_path / 'nope'} not found: "
        "set KUBECONFIG or pass --kubeconfig"
    )
    assert service.requests == []


def test_which_kubeconfig_kubectl_gets(home_kubeconfig: Path, tmp_path: Path) -> None:
    env = {"HOME": str(home_kubeconfig.parents[1])}
    assert kubeconfig_of(None, env) is None  # kubectl's own default, which exists
    listed = f"{tmp_path / 'missing'}{os.pathsep}{home_kubeconfig}"
    assert kubeconfig_of(listed, env) == listed  # a list: one of its files is enough
    with pytest.raises(ForwardError, match=r"^no kubeconfig"):
        kubeconfig_of(None, {"HOME": str(tmp_path)})


def test_kubectls_localhost_fallback_is_said_as_a_missing_kubeconfig() -> None:
    refused = (
        "The connection to the server localhost:8080 was refused - did you specify the "
        "right host or port?"
    )
    assert kubectl_error(refused) == (
        "the kubeconfig names no cluster (kubectl tried localhost:8080): "
        "set KUBECONFIG or pass --kubeconfig"
    )


def test_a_deployment_without_a_listener_is_looked_up_in_every_namespace() -> None:
    target = Target(deployment_id=DEP_ID, name="agent-one", namespace=None)
    argv = service_query("kubectl", target, None)
    assert "--all-namespaces" in argv
    assert "-n" not in argv
    assert pick_service(json.dumps(SERVICE), target) == ("team-a", "agent-one-11111111")


def test_pick_service_refuses_several_and_garbage() -> None:
    target = Target(deployment_id=DEP_ID, name="agent-one", namespace="a")
    with pytest.raises(ForwardError, match="has 2 agent-server Services"):
        pick_service(json.dumps({"items": SERVICE["items"] * 2}), target)
    with pytest.raises(ForwardError, match="did not answer JSON"):
        pick_service("<html>", target)


def test_the_forward_listens_on_loopback_only() -> None:
    argv = forward_argv("kubectl", "ns", "svc", 9000, None)
    assert argv[argv.index("--address") + 1] == "127.0.0.1"
    assert "9000:8000" in argv


def test_port_0_lets_the_system_pick_and_the_line_names_the_port_kubectl_bound(
    service: FakeService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    on_listener(service)
    monkeypatch.setenv("DEPLOYPLANE_TOOLS_BIN", str(forwarding_then_lost(tmp_path, 43117)))
    result = run("deployments", "port-forward", DEP_ID, "0")
    assert result.stdout.startswith("forwarding http://127.0.0.1:43117 -> deployment agent-one ")
    assert calls(tmp_path)[1].endswith(" service/agent-one-11111111 :8000 --address 127.0.0.1")


@pytest.mark.parametrize(
    ("line", "port"),
    [
        ("Forwarding from 127.0.0.1:43117 -> 8000\n", 43117),
        ("Forwarding from [::1]:43117 -> 8000\n", None),
        ("error: unable to listen on any of the requested ports\n", None),
        ("", None),
    ],
)
def test_the_listening_port_is_read_from_kubectls_first_line(line: str, port: int | None) -> None:
    assert listening_port(line) == port


def test_kubectl_error_is_its_last_error_line() -> None:
    assert kubectl_error("") == "kubectl failed without a message"
    text = 'Handling connection\nE1127 noise\nerror: pods "x" not found\n'
    assert kubectl_error(text) == 'pods "x" not found'


def test_a_tools_dir_without_kubectl_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ForwardError, match="has no kubectl"):
        find_kubectl({"DEPLOYPLANE_TOOLS_BIN": str(tmp_path)})


_FAKE_KUBECTL = """
import sys, time
print("Forwarding from 127.0.0.1:18000 -> 8000", flush=True)
time.sleep(120)
"""

_FORWARDER = """
import signal, sys
from deployplane.cli.commands.portforward import run_forward
signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a background job (`... &`) inherits it
run_forward([sys.executable, "-c", sys.argv[1]], lambda port: f"announce {port}")
print("stopped", flush=True)
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_ctrl_c_or_sigterm_stops_the_forward_and_kubectl_whatever_was_inherited(
    sig: signal.Signals,
) -> None:
    """A forward started in the background once ignored Ctrl-C, and SIGTERM left
    kubectl (in its own session) running: both now stop it, kubectl with it."""
    process = subprocess.Popen(
        [sys.executable, "-c", _FORWARDER, _FAKE_KUBECTL],
        stdout=subprocess.PIPE,
        text=True,
    )
    kubectl: int | None = None
    try:
        assert process.stdout is not None
        assert process.stdout.readline() == "announce 18000\n"
        kubectl = _child_of(process.pid)
        process.send_signal(sig)
        assert process.wait(timeout=30) == 0  # a bound for a hang, not a figure
        assert process.stdout.read() == "stopped\n"
        assert not _alive(kubectl), "kubectl outlived the forward"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if kubectl is not None and _alive(kubectl):  # ours, by its pid: leave nothing
            os.kill(kubectl, signal.SIGKILL)


def _child_of(pid: int) -> int:
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    assert len(children) == 1, children
    return int(children[0])


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper is gone for this purpose)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"
