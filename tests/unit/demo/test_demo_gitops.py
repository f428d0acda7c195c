"""`make demo GITOPS=1` and examples/gitops/: the demo's fixed ports are the ones the
examples name (so that they apply there as they are), a taken port is one clear error,
and the demo's own Application is the example's, pointed at the demo's repository."""

from __future__ import annotations

import re
import socket
from pathlib import Path
from typing import Any

import pytest
import yaml

from deployplane.demo import gitops
from deployplane.devcluster.errors import DevClusterError

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "gitops"


def _docs(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((EXAMPLES / name).read_text()) if d]


def test_the_examples_name_the_demos_emulator_and_git_server() -> None:
    git = f"http://127.0.0.1:{gitops.GIT_PORT}/agents.git"
    (app,) = _docs("argocd-application.yaml")
    assert app["spec"]["source"]["repoURL"] == git
    source, kustomization = _docs("flux.yaml")
    assert source["spec"]["url"] == git
    assert app["spec"]["source"]["path"] == kustomization["spec"]["path"].removeprefix("./")
    overlay = (EXAMPLES / app["spec"]["source"]["path"] / "kustomization.yaml").read_text()
    assert f'"http://127.0.0.1:{gitops.EMULATOR_PORT}"' in overlay
    # Argo CD's and Flux's copies each in a namespace of their own.
    assert app["spec"]["destination"]["namespace"] != kustomization["spec"]["targetNamespace"]


def test_the_application_retries_at_the_newest_commit_with_a_short_backoff() -> None:
    (app,) = _docs("argocd-application.yaml")
    retry = app["spec"]["syncPolicy"]["retry"]
    assert retry["refresh"] is True
    assert retry["backoff"] == {"duration": "5s", "factor": 2, "maxDuration": "30s"}
    (_, kustomization) = _docs("flux.yaml")
    assert kustomization["spec"]["retryInterval"] == "1m"


@pytest.mark.parametrize("port", ["EMULATOR_PORT", "GIT_PORT"])
def test_a_taken_port_is_one_clear_error(port: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        monkeypatch.setattr(gitops, port, holder.getsockname()[1])
        with pytest.raises(DevClusterError, match="another `make demo GITOPS=1`"):
            gitops.check_ports()


def test_the_demos_own_application_is_the_examples_on_its_repository() -> None:
    app = gitops.application("demo", "http://127.0.0.1:1/demo.git", "demo")
    (example,) = _docs("argocd-application.yaml")
    assert app["spec"]["source"] == {
        **example["spec"]["source"],
        "repoURL": "http://127.0.0.1:1/demo.git",
        "path": "agents",
    }
    assert app["spec"]["syncPolicy"] == example["spec"]["syncPolicy"]


def test_docs_show_the_examples_as_they_are() -> None:
    """docs/gitops.md's YAML of the Application and of the Flux objects is the files'."""
    text = (EXAMPLES.parents[1] / "docs" / "gitops.md").read_text()
    shown = [
        [d for d in yaml.safe_load_all(block) if d]
        for block in re.findall(r"^```yaml\n(.*?)^```", text, re.S | re.M)
    ]
    for name in ("argocd-application.yaml", "flux.yaml"):
        assert _docs(name) in shown, name
