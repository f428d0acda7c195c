"""The docs' shell commands, as tests/e2e/test_demo.py takes them from the Markdown: the
extraction itself (prompts, continuations, quotes, comments, other languages), that
every `kubectl`/`deployplane` command of README.md and docs/install.md either runs on
`make demo` or says why it cannot, and every command of docs/gitops.md on `make demo
GITOPS=1` (tests/support/doccommands.py); the docs' way to put `deployplane` and
`kubectl` on PATH."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from tests.support.doccommands import (
    DOCS,
    GITOPS_DOCS,
    doc_commands,
    gitops_doc_commands,
    why_not_on_the_demo,
    why_not_on_the_gitops_demo,
)

from deployplane.demo.steps import STATE
from deployplane.devcluster import DevCluster

ROOT = Path(__file__).resolve().parents[3]

SAMPLE = """# A page

```console
$ kubectl get agd -n demo
NAME   READY
bot    True
$ kubectl apply -n demo -f a.yaml \\
    -f b.yaml
```

```sh
# a comment line
kubectl -n demo get agd bot -o jsonpath='{range .x}
{end}'  # a quote over two lines
helm install x charts/deployplane
KUBECONFIG=x kubectl -n demo get agd
deployplane deployments list
```

```yaml
kubectl: not a command, a YAML key
```
"""


def test_commands_are_taken_from_every_shell_block_whatever_the_page(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / DOCS[0]).write_text(SAMPLE)
    (tmp_path / DOCS[1]).write_text("no blocks here\n")
    found = [(c.doc, c.line, c.text) for c in doc_commands(tmp_path)]
    assert found == [
        ("README.md", 4, "kubectl get agd -n demo"),
        ("README.md", 7, "kubectl apply -n demo -f a.yaml \\\n    -f b.yaml"),
        (
            "README.md",
            13,
            "kubectl -n demo get agd bot -o jsonpath='{range .x}\n{end}'  # a quote over two lines",
        ),
        ("README.md", 16, "KUBECONFIG=x kubectl -n demo get agd"),
        ("README.md", 17, "deployplane deployments list"),
    ]


def test_every_command_of_the_docs_runs_on_the_demo_or_says_why_not() -> None:
    commands = doc_commands(ROOT)
    assert {c.doc for c in commands} == set(DOCS)
    runs = [c for c in commands if why_not_on_the_demo(c) is None]
    assert runs, "no command of the docs runs on the demo"
    # On the demo the resources are in `demo`; `agents` holds their workloads only.
    resource = re.compile(r"\b(agentdeployments?|agd|listeners?|dpl)\b")
    wrong = [str(c) for c in runs if "-n agents" in c.text and resource.search(c.text)]
    assert wrong == [], "the demo's resources live in namespace demo"


@pytest.mark.parametrize("doc", ["README.md", *GITOPS_DOCS])
def test_the_docs_put_deployplane_and_kubectl_on_path_and_use_the_demos_cluster(
    doc: str,
) -> None:
    """Outside the demo's closing lines: the doc's own `export PATH=...` (run from the
    repository's root, in a shell without either) finds the virtualenv's `deployplane`
    and the directory `make tools` builds `kubectl` into; its KUBECONFIG is the demo's."""
    lines = [c.text for c in doc_commands(ROOT, (doc,), None) if c.text.startswith("export ")]
    path_line = [line for line in lines if line.startswith("export PATH=")]
    kubeconfig = [line for line in lines if line.startswith("export KUBECONFIG=")]
    assert len(path_line) == 1, lines
    demo_kubeconfig = STATE / "cluster" / DevCluster(Path("cluster")).kubeconfig.name
    assert kubeconfig == [f"export KUBECONFIG=$PWD/{demo_kubeconfig}"]
    script = f'{path_line[0]}\ncommand -v deployplane\nprintf "%s\\n" "$PATH"'
    done = subprocess.run(
        ["bash", "--norc", "-c", script],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/")},
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    found, path = done.stdout.splitlines()
    assert Path(found) == ROOT / ".venv" / "bin" / "deployplane"
    tools = subprocess.run(
        ["bash", str(ROOT / "tools" / "k8s" / "build.sh"), "path"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout.strip()
    assert tools in path.split(":"), path


def test_every_command_of_the_gitops_doc_runs_on_the_gitops_demo_or_says_why_not() -> None:
    commands = gitops_doc_commands(ROOT)
    runs = [c for c in commands if why_not_on_the_gitops_demo(c) is None]
    programs = {c.text.split()[0] for c in runs}
    # git and the rest run too (every command of its blocks), kubectl against Argo CD's
    # and Flux's objects among them.
    assert {"git", "kubectl", "cp"} <= programs, programs
    assert any("argocd" in c.text for c in runs)
    assert any("reconcile.fluxcd.io/requestedAt" in c.text for c in runs)
    # The demo's state, never the dev cluster's: .deployplane/cluster/ is another one.
    assert not [str(c) for c in runs if ".deployplane/cluster/" in c.text]
    skipped = [c for c in commands if why_not_on_the_gitops_demo(c) is not None]
    assert all(not c.text.startswith(("kubectl apply", "kubectl -n argocd")) for c in skipped)
